/* What the shim's C files share among themselves (not with Rust: that is
 * contract.h). Hot-path helpers are inline here so that the eval function
 * pays no call for them. */
#ifndef FRAMEHOOK_SHIM_INTERNAL_H
#define FRAMEHOOK_SHIM_INTERNAL_H

#include "compat.h"
#include "contract.h"
#include "framehook.h"

#include <stdatomic.h>

#define FH_NOINLINE __attribute__((noinline))
/* Off the eval function's paths: never inlined into them, nor laid out among them. */
#define FH_COLD __attribute__((cold, noinline))
/* Thread locals read on the eval function's paths: a few bytes of the static TLS
 * block instead of a __tls_get_addr call per read. */
#define FH_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

/* ---------------------------------------------------------------- eval.c */

/* framehook's PEP 523 eval function. */
PyObject *fh_eval(PyThreadState *tstate, fh_frame *frame, int throwflag);

/* ---------------------------------------------------------- code_extra.c */

#ifdef Py_GIL_DISABLED
/* framehook's stores to co_extra, counted as in a seqlock (code_extra.c). */
extern _Atomic unsigned long fh_extra_stores;
#endif

/* How CPython stores co_extra (Objects/codeobject.c, the same in 3.9-3.15):
 * read directly, it costs no call, no thread-state lookup, no lock. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} fh_code_extra_array;

static inline void *fh_read_code_extra(PyObject *code, Py_ssize_t index)
{
#ifdef Py_GIL_DISABLED
    /* Atomic loads: a store may be under way (the caller discards the result then). */
    fh_code_extra_array *extra = __atomic_load_n((fh_code_extra_array **)&((PyCodeObject *)code)->co_extra, __ATOMIC_RELAXED);
    return extra != NULL && index < __atomic_load_n(&extra->ce_size, __ATOMIC_RELAXED)
               ? __atomic_load_n(&extra->ce_extras[index], __ATOMIC_RELAXED)
               : NULL;
#else
    fh_code_extra_array *extra = (fh_code_extra_array *)((PyCodeObject *)code)->co_extra;
    return extra != NULL && index < extra->ce_size ? extra->ce_extras[index] : NULL;
#endif
}

#ifdef Py_GIL_DISABLED
static inline void fh_spin_pause(void)
{
#  if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#  elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#  endif
}
#endif

/* What framehook stored on `code` (a code object) at `index`, or NULL. */
static inline void *fh_code_extra(PyObject *code, Py_ssize_t index)
{
#ifdef Py_GIL_DISABLED
    for (;;) {
        unsigned long stores = atomic_load_explicit(&fh_extra_stores, memory_order_acquire);
        if (!(stores & 1)) {
            void *extra = fh_read_code_extra(code, index);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&fh_extra_stores, memory_order_relaxed) == stores) {
                return extra;
            }
        }
        fh_spin_pause(); /* a store of framehook's is under way: it is short */
    }
#else
    return fh_read_code_extra(code, index);
#endif
}

/* --------------------------------------------------------- native_chain.c */

#ifdef Py_GIL_DISABLED
#  define FH_CHAIN_REFS_ADD(chain, delta) atomic_fetch_add((_Atomic Py_ssize_t *)&(chain)->refs, (delta))
#else
/* Retained and released under the GIL. */
#  define FH_CHAIN_REFS_ADD(chain, delta) (((chain)->refs += (delta)) - (delta))
#endif

/* Frees a chain whose last reference went, releasing its links' owners. */
FH_COLD void fh_native_chain_free(fh_native_chain *chain);

static inline void fh_native_chain_release(fh_native_chain *chain)
{
    if (FH_CHAIN_REFS_ADD(chain, -1) == 1) {
        fh_native_chain_free(chain);
    }
}

/* The context's native chain for `generation`, retained, or NULL. */
static inline fh_native_chain *fh_native_chain_for(fh_context *context, unsigned long long generation)
{
#ifdef Py_GIL_DISABLED
    atomic_fetch_add(&context->native_chain_readers, 1);
#endif
    fh_native_chain *chain = atomic_load_explicit(&context->native_chain, memory_order_acquire);
    if (chain != NULL && chain->generation == generation) {
        (void)FH_CHAIN_REFS_ADD(chain, 1);
    } else {
        chain = NULL;
    }
#ifdef Py_GIL_DISABLED
    atomic_fetch_sub(&context->native_chain_readers, 1);
#endif
    return chain;
}

/* -------------------------------------------------------------- replace.c */

/* Runs the frame with the decision's replacement code (decision->code), with
 * `next` as the evaluator. */
PyObject *fh_run_replacement(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                             const fh_decision *decision);

/* Runs the frame with a remembered replacement (a new reference, taken), one
 * that takes the original's arguments slot for slot: no hook is asked, and
 * nothing is to be done after the frame. */
PyObject *fh_run_remembered(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                            PyObject *replacement);

#if FH_INTERP_FRAMES
/* A replacement that does not fit in place is called as a function: the frame
 * that call starts must pass straight through. It is the thread's
 * fh_called_replacement, read only while some thread is in such a call. */
extern FH_THREAD_LOCAL PyCodeObject *fh_called_replacement;
extern _Atomic int fh_replacement_calls;

static inline int fh_replacement_called(PyCodeObject *code)
{
    return atomic_load_explicit(&fh_replacement_calls, memory_order_relaxed) && fh_called_replacement == code;
}

/* Once that frame has arrived (or the code's frame passes for another reason),
 * it is no longer expected. */
static inline void fh_forget_called_replacement(PyCodeObject *code)
{
    if (fh_replacement_called(code)) {
        fh_called_replacement = NULL;
    }
}
#else
static inline int fh_replacement_called(PyCodeObject *code) { (void)code; return 0; }
static inline void fh_forget_called_replacement(PyCodeObject *code) { (void)code; }
#endif

/* -------------------------------------------------------------- observe.c */

/* Runs a hooked frame as `decision` says (its replacement, when it has one)
 * and reports its start and end to the decision's observers, which it releases. */
PyObject *fh_run_observed(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next, fh_context *context,
                          const fh_decision *decision);
/* Runs a frame that is not hooked (resumed, thrown into, not a function's)
 * and reports its start and end to `observers`, which it releases. */
PyObject *fh_run_observed_unhooked(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                   _PyFrameEvalFunction next, fh_context *context, void *observers);

/* ---------------------------------------------------------- stack_guard.c */

/* With any PEP 523 function installed, every Python-to-Python call recurses in
 * C. Where the evaluator does not check the C stack itself, frames refuse to
 * start once the thread's stack is nearly used up. */
#if !FH_EVAL_CHECKS_C_STACK && defined(__linux__)
#  define FH_C_STACK_GUARD 1
/* A few dozen frames deep the C stack cannot be near its end: the stack is
 * checked only past this depth. */
#  define FH_STACK_CHECK_DEPTH 64
int fh_c_stack_exhausted(void);
#else
#  define FH_C_STACK_GUARD 0
#endif

#endif /* FRAMEHOOK_SHIM_INTERNAL_H */
