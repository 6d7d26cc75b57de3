/* Per-code storage (co_extra), safe on free-threaded builds. */
#include "shim_internal.h"

#ifdef Py_GIL_DISABLED
/* co_extra is not thread-safe on free-threaded 3.13/early 3.14 (gh-144981):
 * storing reallocates the array under readers' feet. framehook's own stores
 * take this lock and count in fh_extra_stores (odd while one is under way), so
 * the eval function can read without the lock, as with a seqlock: what it
 * read counts only if no store of framehook's began or ended meanwhile
 * (fh_code_extra in shim_internal.h). */
static PyMutex fh_extra_lock;
_Atomic unsigned long fh_extra_stores;
#  define EXTRA_LOCK() PyMutex_Lock(&fh_extra_lock)
#  define EXTRA_UNLOCK() PyMutex_Unlock(&fh_extra_lock)
#else
#  define EXTRA_LOCK() ((void)0)
#  define EXTRA_UNLOCK() ((void)0)
#endif

Py_ssize_t fh_request_code_extra_index(freefunc free_extra)
{
    EXTRA_LOCK();
    Py_ssize_t index = fh_compat_request_code_extra_index(free_extra);
    EXTRA_UNLOCK();
    return index;
}

void *fh_code_get_extra(PyObject *code, Py_ssize_t index) { return fh_code_extra(code, index); }

void *fh_code_extra_or_store(PyObject *code, Py_ssize_t index, void *extra)
{
    /* Looked up and stored as one step: CPython frees a value stored over, which
     * another thread may be using already. */
    EXTRA_LOCK();
    void *existing = fh_read_code_extra(code, index);
    if (existing != NULL) {
        EXTRA_UNLOCK();
        return existing;
    }
#ifdef Py_GIL_DISABLED
    atomic_fetch_add_explicit(&fh_extra_stores, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* the count is odd before the array changes */
#endif
    int status = fh_compat_code_set_extra(code, index, extra);
#ifdef Py_GIL_DISABLED
    atomic_fetch_add_explicit(&fh_extra_stores, 1, memory_order_release);
#endif
    EXTRA_UNLOCK();
    return status == 0 ? extra : NULL;
}
