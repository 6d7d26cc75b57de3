/* Everything framehook needs from CPython's internals, for 3.9 to 3.14.
 *
 * Compiled with Py_BUILD_CORE against the internal headers of exactly one
 * interpreter (see build.rs). The version branches of the whole project are in
 * this file; the rest of framehook sees only shim.h.
 *
 * How a replacement runs:
 *  - 3.9/3.10: the frame arrives fully set up (cells made, free variables
 *    copied). A shadow PyFrameObject is made for the replacement with
 *    PyFrame_New, arguments/cells/free variables are filled in by the
 *    replacement's layout, and the original is left to its caller.
 *  - 3.11+: the frame arrives fresh (only arguments bound, nothing executed,
 *    at the top of the thread's data stack). It is re-initialised in place for
 *    the replacement code, so CPython's own clear/pop (the caller's in 3.11,
 *    the eval loop's in 3.12+) frees it on every path. When the replacement's
 *    frame does not fit where the original is, the replacement is called as a
 *    function with the original's bound arguments and the original is
 *    discarded unrun.
 */
/* CPython's internal headers assert what its own release builds do not check:
 * the shim's asserts follow the interpreter's build, not the C compiler's default. */
#include <pyconfig.h>
#if !defined(Py_DEBUG) && !defined(NDEBUG)
#  define NDEBUG
#endif
#include "shim.h"
#include "framehook.h"

#include <frameobject.h>
#include <stdatomic.h>
#include <string.h>
#ifdef Py_GIL_DISABLED
#  include <sched.h>
#  include "internal/pycore_object.h"
#endif

#if PY_VERSION_HEX >= 0x030B0000
#  define FH_INTERP_FRAMES 1
#  include "internal/pycore_code.h"
#  include "internal/pycore_frame.h"
#  if PY_VERSION_HEX >= 0x030D0000
#    include "internal/pycore_ceval.h"
#  endif
#  if PY_VERSION_HEX >= 0x030E0000
#    include "internal/pycore_interpframe.h"
#    include "internal/pycore_stackref.h"
#  endif
typedef _PyInterpreterFrame fh_frame;
#else
#  define FH_INTERP_FRAMES 0
typedef PyFrameObject fh_frame;
#endif

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *obj) { Py_INCREF(obj); return obj; }
static inline PyObject *Py_XNewRef(PyObject *obj) { Py_XINCREF(obj); return obj; }
#endif

#define FH_NOINLINE __attribute__((noinline))
/* Thread locals read on the eval function's paths: a few bytes of the static TLS
 * block instead of a __tls_get_addr call per read. */
#define FH_THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))

#define FH_GENERATOR_KINDS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

/* ------------------------------------------------------------------ build */

unsigned long fh_build_version_hex(void) { return PY_VERSION_HEX; }

int fh_build_gil_disabled(void)
{
#ifdef Py_GIL_DISABLED
    return 1;
#else
    return 0;
#endif
}

int fh_build_debug(void)
{
#ifdef Py_DEBUG
    return 1;
#else
    return 0;
#endif
}

/* ---------------------------------------------- per-interpreter chaining */

/* The eval function each interpreter had before framehook's, looked up on
 * every frame. Entries are written under the caller's lock and read without
 * one; an interpreter's entry is never reused for another while installed. */
#define FH_MAX_INTERPRETERS 64
typedef struct {
    _Atomic(PyInterpreterState *) interp;
    _Atomic(_PyFrameEvalFunction) previous; /* never NULL: CPython's default included */
    _Atomic(void *) context; /* what framehook_dispatch gets as view->context */
} fh_chain_entry;

static fh_chain_entry fh_chain[FH_MAX_INTERPRETERS];

static PyObject *fh_eval(PyThreadState *tstate, fh_frame *frame, int throwflag);

static inline fh_chain_entry *chain_entry(PyInterpreterState *interp)
{
    /* The first slot, the usual one, at a fixed address: fewer instructions. */
    if (atomic_load_explicit(&fh_chain[0].interp, memory_order_acquire) == interp) {
        return &fh_chain[0];
    }
    for (int i = 1; i < FH_MAX_INTERPRETERS; i++) {
        if (atomic_load_explicit(&fh_chain[i].interp, memory_order_acquire) == interp) {
            return &fh_chain[i];
        }
    }
    return NULL;
}

static inline _PyFrameEvalFunction next_eval(fh_chain_entry *entry)
{
    return atomic_load_explicit(&entry->previous, memory_order_acquire);
}

/* Whether `current`, installed instead of ours, cannot be calling ours: it is
 * what ours replaced, or CPython's default evaluator, which calls no one. */
static int displaced_for_good(fh_chain_entry *entry, _PyFrameEvalFunction current)
{
    return current == next_eval(entry) || current == _PyEval_EvalFrameDefault;
}

int fh_install(void *context)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    fh_chain_entry *entry = chain_entry(interp);
    if (entry != NULL) {
        _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
        if (current != (_PyFrameEvalFunction)fh_eval && displaced_for_good(entry, current)) {
            /* The tool that installed its function over ours has put back
             * what ours replaced (or the default): nothing calls ours any more. */
            atomic_store(&entry->previous, current);
            atomic_store(&entry->context, context);
            _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)fh_eval);
            return 0;
        }
        return 1; /* ours is in the interpreter's chain already */
    }
    for (int i = 0; i < FH_MAX_INTERPRETERS; i++) {
        if (atomic_load(&fh_chain[i].interp) == NULL) {
            _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
            atomic_store(&fh_chain[i].previous, current);
            atomic_store(&fh_chain[i].context, context);
            atomic_store_explicit(&fh_chain[i].interp, interp, memory_order_release);
            _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)fh_eval);
            return 0;
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "framehook: too many interpreters with hooks installed");
    return -1;
}

int fh_uninstall(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    fh_chain_entry *entry = chain_entry(interp);
    if (entry == NULL) {
        return 1;
    }
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current != (_PyFrameEvalFunction)fh_eval && displaced_for_good(entry, current)) {
        /* Another tool installed its function over ours and has since put
         * back what ours replaced (or the default): ours is out of the chain. */
        atomic_store(&entry->interp, NULL);
        return 1;
    }
    if (current != (_PyFrameEvalFunction)fh_eval) {
        /* Another tool installed its function over ours and calls ours as its
         * previous one: stay in the chain, passing frames through. */
        return 0;
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, atomic_load(&entry->previous));
    atomic_store(&entry->interp, NULL);
    return 1;
}

/* Hooks and observers run the way CPython runs a trace function: sys.settrace,
 * sys.setprofile and sys.monitoring do not see their frames, and frames they
 * start are not hooked (fh_eval passes frames through while tracing). */
static inline void enter_hook_context(PyThreadState *tstate)
{
#if PY_VERSION_HEX >= 0x030C0000
    tstate->tracing++; /* all PyThreadState_EnterTracing does since 3.12 */
#elif PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(tstate);
#else
    tstate->tracing++;
#  if PY_VERSION_HEX >= 0x030A0000
    tstate->cframe->use_tracing = 0;
#  else
    tstate->use_tracing = 0;
#  endif
#endif
}

static inline void leave_hook_context(PyThreadState *tstate)
{
#if PY_VERSION_HEX >= 0x030C0000
    tstate->tracing--;
#elif PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(tstate);
#else
    tstate->tracing--;
    /* As CPython's call_trace leaves it: a hook may have set or cleared a tracer. */
    int use_tracing = tstate->tracing == 0 && (tstate->c_tracefunc != NULL || tstate->c_profilefunc != NULL);
#  if PY_VERSION_HEX >= 0x030A0000
    tstate->cframe->use_tracing = use_tracing;
#  else
    tstate->use_tracing = use_tracing;
#  endif
#endif
}

void fh_enter_hook_context(PyThreadState *tstate) { enter_hook_context(tstate); }

void fh_leave_hook_context(PyThreadState *tstate) { leave_hook_context(tstate); }

int fh_code_has_exception_table(PyObject *code)
{
#if FH_INTERP_FRAMES
    return PyCode_Check(code) && PyBytes_GET_SIZE(((PyCodeObject *)code)->co_exceptiontable) > 0;
#else
    return 0;
#endif
}

int fh_is_installed(void)
{
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get())
           == (_PyFrameEvalFunction)fh_eval;
}

void *fh_current_eval_function(void)
{
    return (void *)_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
}

void *fh_framehook_eval_function(void) { return (void *)fh_eval; }

/* ---------------------------------------------------------------- co_extra */

#ifdef Py_GIL_DISABLED
/* co_extra is not thread-safe on free-threaded 3.13/early 3.14 (gh-144981):
 * storing reallocates the array under readers' feet. framehook's own stores
 * take this lock and count in fh_extra_stores (odd while one is under way), so
 * the eval function can read without the lock, as with a seqlock: what it
 * read counts only if no store of framehook's began or ended meanwhile. */
static PyMutex fh_extra_lock;
static _Atomic unsigned long fh_extra_stores;
#  define EXTRA_LOCK() PyMutex_Lock(&fh_extra_lock)
#  define EXTRA_UNLOCK() PyMutex_Unlock(&fh_extra_lock)
#else
#  define EXTRA_LOCK() ((void)0)
#  define EXTRA_UNLOCK() ((void)0)
#endif

Py_ssize_t fh_request_code_extra_index(freefunc free_extra)
{
    EXTRA_LOCK();
#if PY_VERSION_HEX >= 0x030C0000
    Py_ssize_t index = PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
#else
    Py_ssize_t index = _PyEval_RequestCodeExtraIndex(free_extra);
#endif
    EXTRA_UNLOCK();
    return index;
}

/* How CPython stores co_extra (Objects/codeobject.c, the same in 3.9-3.14):
 * read directly, it costs no call, no thread-state lookup, no lock. */
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} fh_code_extra;

static inline void *read_code_extra(PyObject *code, Py_ssize_t index)
{
#ifdef Py_GIL_DISABLED
    /* Atomic loads: a store may be under way (the caller discards the result then). */
    fh_code_extra *extra = __atomic_load_n((fh_code_extra **)&((PyCodeObject *)code)->co_extra, __ATOMIC_RELAXED);
    return extra != NULL && index < __atomic_load_n(&extra->ce_size, __ATOMIC_RELAXED)
               ? __atomic_load_n(&extra->ce_extras[index], __ATOMIC_RELAXED)
               : NULL;
#else
    fh_code_extra *extra = (fh_code_extra *)((PyCodeObject *)code)->co_extra;
    return extra != NULL && index < extra->ce_size ? extra->ce_extras[index] : NULL;
#endif
}

#ifdef Py_GIL_DISABLED
static inline void spin_pause(void)
{
#  if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#  elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#  endif
}
#endif

/* The code state framehook stored on `code` (a code object), or NULL. */
static inline void *code_extra(PyObject *code, Py_ssize_t index)
{
#ifdef Py_GIL_DISABLED
    for (;;) {
        unsigned long stores = atomic_load_explicit(&fh_extra_stores, memory_order_acquire);
        if (!(stores & 1)) {
            void *extra = read_code_extra(code, index);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&fh_extra_stores, memory_order_relaxed) == stores) {
                return extra;
            }
        }
        spin_pause(); /* a store of framehook's is under way: it is short */
    }
#else
    return read_code_extra(code, index);
#endif
}

void *fh_code_get_extra(PyObject *code, Py_ssize_t index) { return code_extra(code, index); }

void *fh_code_extra_or_store(PyObject *code, Py_ssize_t index, void *extra)
{
    /* Looked up and stored as one step: CPython frees a value stored over, which
     * another thread may be using already. */
    EXTRA_LOCK();
    void *existing = read_code_extra(code, index);
    if (existing != NULL) {
        EXTRA_UNLOCK();
        return existing;
    }
#ifdef Py_GIL_DISABLED
    atomic_fetch_add_explicit(&fh_extra_stores, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release); /* the count is odd before the array changes */
#endif
#if PY_VERSION_HEX >= 0x030C0000
    int status = PyUnstable_Code_SetExtra(code, index, extra);
#else
    int status = _PyCode_SetExtra(code, index, extra);
#endif
#ifdef Py_GIL_DISABLED
    atomic_fetch_add_explicit(&fh_extra_stores, 1, memory_order_release);
#endif
    EXTRA_UNLOCK();
    return status == 0 ? extra : NULL;
}

/* ------------------------------------------------------- frame accessors */

static inline PyCodeObject *frame_code(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    return _PyFrame_GetCode(frame);
#else
    return frame->f_code;
#endif
}

#if FH_INTERP_FRAMES
static inline PyObject *frame_function(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030E0000
    return PyStackRef_AsPyObjectBorrow(frame->f_funcobj);
#elif PY_VERSION_HEX >= 0x030C0000
    return frame->f_funcobj;
#else
    return (PyObject *)frame->f_func;
#endif
}

#if PY_VERSION_HEX >= 0x030E0000
typedef _PyStackRef fh_slot;
static inline PyObject *slot_object(fh_slot slot)
{
    return PyStackRef_IsNull(slot) ? NULL : PyStackRef_AsPyObjectBorrow(slot);
}
static inline void slot_release(fh_slot slot) { PyStackRef_XCLOSE(slot); }
#  define FH_SLOT_NULL PyStackRef_NULL
#else
typedef PyObject *fh_slot;
static inline PyObject *slot_object(fh_slot slot) { return slot; }
static inline void slot_release(fh_slot slot) { Py_XDECREF(slot); }
#  define FH_SLOT_NULL NULL
#endif

static inline _PyInterpreterFrame *thread_current_frame(PyThreadState *tstate)
{
#if PY_VERSION_HEX >= 0x030D0000
    return tstate->current_frame;
#else
    return tstate->cframe->current_frame;
#endif
}

static inline int frame_slot_count(PyCodeObject *code)
{
#if PY_VERSION_HEX >= 0x030C0000
    return code->co_framesize;
#else
    return code->co_nlocalsplus + code->co_stacksize + FRAME_SPECIALS_SIZE;
#endif
}

static inline int frame_is_fresh(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030E0000
    return frame->instr_ptr == _PyFrame_GetBytecode(frame);
#elif PY_VERSION_HEX >= 0x030D0000
    return frame->instr_ptr == _PyCode_CODE(frame_code(frame));
#else
    return _PyInterpreterFrame_LASTI(frame) < 0;
#endif
}
#endif /* FH_INTERP_FRAMES */

/* Frames hooks never see: resumed generators and coroutines, frames of code
 * that is not a function's (trampolines), and, on 3.9/3.10, every
 * generator-like frame (its generator exists already and would keep resuming
 * the original frame). */
static inline int frame_is_hookable(fh_frame *frame)
{
#if FH_INTERP_FRAMES
    return frame->owner == FRAME_OWNED_BY_THREAD && frame_is_fresh(frame)
           && PyFunction_Check(frame_function(frame));
#else
    return frame->f_lasti == -1 && frame->f_gen == NULL
           && !(frame->f_code->co_flags & FH_GENERATOR_KINDS);
#endif
}

PyObject *fh_view_globals(const fh_frame_view *view)
{
    return ((fh_frame *)view->frame)->f_globals;
}

PyObject *fh_view_builtins(const fh_frame_view *view)
{
    return ((fh_frame *)view->frame)->f_builtins;
}

int fh_view_has_locals_mapping(const fh_frame_view *view)
{
    return !(view->code->co_flags & CO_OPTIMIZED) && ((fh_frame *)view->frame)->f_locals != NULL;
}

static int put_unboxed(PyObject *dict, PyObject *name, PyObject *value, int is_cell)
{
    if (value != NULL && is_cell && PyCell_Check(value)) {
        value = PyCell_GET(value);
    }
    return value == NULL ? 0 : PyDict_SetItem(dict, name, value);
}

PyObject *fh_view_locals(const fh_frame_view *view)
{
    fh_frame *frame = (fh_frame *)view->frame;
    PyCodeObject *code = view->code;
    if (fh_view_has_locals_mapping(view)) {
        return Py_NewRef(frame->f_locals);
    }
    PyObject *dict = PyDict_New();
    if (dict == NULL) {
        return NULL;
    }
#if FH_INTERP_FRAMES
    /* Fresh frame: arguments are in their slots (raw, even when they are
     * cells); cell-only slots are empty; free variables are still in the
     * function's closure, COPY_FREE_VARS has not run. */
    PyObject *closure = PyFunction_GET_CLOSURE(frame_function(frame));
    int first_free = code->co_nlocalsplus - code->co_nfreevars;
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        _PyLocals_Kind kind = _PyLocals_GetKind(code->co_localspluskinds, i);
#ifdef CO_FAST_HIDDEN
        if (kind & CO_FAST_HIDDEN) {
            continue;
        }
#endif
        PyObject *name = PyTuple_GET_ITEM(code->co_localsplusnames, i);
        PyObject *value = slot_object(frame->localsplus[i]);
        int is_cell = 0;
        if ((kind & CO_FAST_FREE) && closure != NULL && value == NULL) {
            value = PyTuple_GET_ITEM(closure, i - first_free);
            is_cell = 1;
        }
        if (put_unboxed(dict, name, value, is_cell) < 0) {
            Py_DECREF(dict);
            return NULL;
        }
    }
#else
    Py_ssize_t ncells = PyTuple_GET_SIZE(code->co_cellvars);
    Py_ssize_t nfrees = PyTuple_GET_SIZE(code->co_freevars);
    for (Py_ssize_t i = 0; i < code->co_nlocals + ncells + nfrees; i++) {
        PyObject *name;
        int is_cell = i >= code->co_nlocals;
        if (i < code->co_nlocals) {
            name = PyTuple_GET_ITEM(code->co_varnames, i);
        } else if (i < code->co_nlocals + ncells) {
            name = PyTuple_GET_ITEM(code->co_cellvars, i - code->co_nlocals);
        } else {
            name = PyTuple_GET_ITEM(code->co_freevars, i - code->co_nlocals - ncells);
        }
        if (put_unboxed(dict, name, frame->f_localsplus[i], is_cell) < 0) {
            Py_DECREF(dict);
            return NULL;
        }
    }
#endif
    return dict;
}

PyObject *fh_view_back(const fh_frame_view *view)
{
#if FH_INTERP_FRAMES
    _PyInterpreterFrame *target = (_PyInterpreterFrame *)view->caller;
    while (target != NULL && _PyFrame_IsIncomplete(target)) {
        target = target->previous;
    }
    if (target == NULL) {
        Py_RETURN_NONE;
    }
    if (target->frame_obj != NULL) {
        return Py_NewRef((PyObject *)target->frame_obj);
    }
    /* Materialise it the public way: walk back from the running frame (the
     * hook's own, whose caller chain reaches the original's caller). */
    PyFrameObject *candidate = PyThreadState_GetFrame(view->tstate);
    while (candidate != NULL) {
        if (candidate->f_frame == target) {
            return (PyObject *)candidate;
        }
        PyFrameObject *back = PyFrame_GetBack(candidate);
        Py_DECREF(candidate);
        candidate = back;
    }
    Py_RETURN_NONE;
#else
    PyFrameObject *back = ((fh_frame *)view->frame)->f_back;
    return Py_NewRef(back ? (PyObject *)back : Py_None);
#endif
}

/* ------------------------------------------------------ running a replacement */

static int total_arguments(PyCodeObject *code)
{
    return code->co_argcount + code->co_kwonlyargcount + !!(code->co_flags & CO_VARARGS)
           + !!(code->co_flags & CO_VARKEYWORDS);
}

static inline int mapped_argument(const int *arg_map, int index)
{
    return arg_map ? arg_map[index] : index;
}

#if !FH_INTERP_FRAMES

/* An argument's value in a set-up 3.9/3.10 frame: in its slot, or moved into
 * its cell when the argument is also a cell variable. Borrowed. */
static PyObject *legacy_argument(PyFrameObject *frame, int index)
{
    PyCodeObject *code = frame->f_code;
    if (frame->f_localsplus[index] != NULL || code->co_cell2arg == NULL) {
        return frame->f_localsplus[index];
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(code->co_cellvars); i++) {
        if (code->co_cell2arg[i] == index) {
            return PyCell_GET(frame->f_localsplus[code->co_nlocals + i]);
        }
    }
    return NULL;
}

static PyObject *run_replacement(PyThreadState *tstate, PyFrameObject *frame,
                                 _PyFrameEvalFunction next, const fh_decision *decision)
{
    PyCodeObject *original = frame->f_code;
    PyCodeObject *code = (PyCodeObject *)decision->code;
    PyObject *locals = (original->co_flags & CO_OPTIMIZED) ? NULL : frame->f_locals;
    PyFrameObject *shadow = PyFrame_New(tstate, code, frame->f_globals, locals);
    if (shadow == NULL) {
        return NULL;
    }
    Py_INCREF(frame->f_builtins);
    Py_SETREF(shadow->f_builtins, frame->f_builtins);

    Py_ssize_t ncells = PyTuple_GET_SIZE(code->co_cellvars);
    int nargs = total_arguments(code);
    for (int i = 0; i < nargs; i++) {
        shadow->f_localsplus[i] = Py_XNewRef(legacy_argument(frame, mapped_argument(decision->arg_map, i)));
    }
    for (Py_ssize_t i = 0; i < ncells; i++) {
        PyObject *initial = NULL;
        if (code->co_cell2arg != NULL && code->co_cell2arg[i] != CO_CELL_NOT_AN_ARG) {
            Py_ssize_t arg = code->co_cell2arg[i];
            initial = shadow->f_localsplus[arg];
            shadow->f_localsplus[arg] = NULL;
        }
        PyObject *cell = PyCell_New(initial);
        Py_XDECREF(initial);
        if (cell == NULL) {
            Py_DECREF(shadow);
            return NULL;
        }
        shadow->f_localsplus[code->co_nlocals + i] = cell;
    }
    Py_ssize_t original_frees = original->co_nlocals + PyTuple_GET_SIZE(original->co_cellvars);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(code->co_freevars); i++) {
        shadow->f_localsplus[code->co_nlocals + ncells + i] =
            Py_XNewRef(frame->f_localsplus[original_frees + i]);
    }
    PyObject *result = next(tstate, shadow, 0);
    Py_DECREF(shadow);
    return result;
}

static void discard_unrun_frame(PyThreadState *tstate, fh_frame *frame)
{
    /* The caller owns and frees 3.9/3.10 frames. */
}

#else /* FH_INTERP_FRAMES */

/* The code a frame started by run_by_call must pass straight through; read
 * only while some thread is in such a call. */
static FH_THREAD_LOCAL PyCodeObject *fh_called_replacement;
static _Atomic int fh_replacement_calls;

static void replacement_call_begin(PyCodeObject *code)
{
    fh_called_replacement = code;
    atomic_fetch_add(&fh_replacement_calls, 1);
}

static void replacement_call_end(void)
{
    fh_called_replacement = NULL;
    atomic_fetch_sub(&fh_replacement_calls, 1);
}

static inline int replacement_called(PyCodeObject *code)
{
    return atomic_load_explicit(&fh_replacement_calls, memory_order_relaxed) && fh_called_replacement == code;
}

static void discard_unrun_frame(PyThreadState *tstate, fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    _PyEval_FrameClearAndPop(tstate, frame);
#elif PY_VERSION_HEX >= 0x030C0000
    /* 3.12 hides _PyEvalFrameClearAndPop. The frame never ran, so it has no
     * frame object and holds only its arguments, function and code. */
    for (int i = 0; i < frame->stacktop; i++) {
        Py_XDECREF(frame->localsplus[i]);
    }
    Py_XDECREF(frame->f_locals);
    Py_DECREF(frame->f_funcobj);
    Py_DECREF(frame->f_code);
    PyObject **base = (PyObject **)frame;
    _PyStackChunk *chunk = tstate->datastack_chunk;
    if (base == &chunk->data[0]) {
        _PyStackChunk *previous = chunk->previous;
        tstate->datastack_top = &previous->data[previous->top];
        tstate->datastack_chunk = previous;
        tstate->datastack_limit = (PyObject **)(((char *)previous) + previous->size);
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
    } else {
        tstate->datastack_top = base;
    }
#else
    /* 3.11: the caller (_PyEval_Vector) clears and pops the frame. */
#endif
}

#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX < 0x030E0000
/* Free-threaded 3.13 gives a function of top-level code (no CO_NESTED) deferred
 * reference counting, or makes it immortal once a second thread has run (gh-117696),
 * so a copy made per call would be freed only by the GC, or never. A function made
 * from code flagged CO_NESTED is counted normally: copies are made from this empty
 * code object, then given theirs. */
static PyObject *fh_nested_code;

static PyCodeObject *code_to_create_with(PyCodeObject *code)
{
    if (code->co_flags & CO_NESTED) {
        return code;
    }
    PyObject *nested = _Py_atomic_load_ptr(&fh_nested_code);
    if (nested == NULL) {
        PyCodeObject *fresh = PyCode_NewEmpty("<framehook>", "<framehook>", 0);
        if (fresh == NULL) {
            return NULL;
        }
        fresh->co_flags |= CO_NESTED; /* never runs: only PyFunction_New reads it */
        if (_Py_atomic_compare_exchange_ptr(&fh_nested_code, &nested, fresh)) {
            nested = (PyObject *)fresh;
        } else {
            Py_DECREF(fresh); /* another thread's is in place: `nested` holds it */
        }
    }
    return (PyCodeObject *)nested;
}
#else
static PyCodeObject *code_to_create_with(PyCodeObject *code) { return code; }
#endif

/* A function like `function` whose code is `code`: generators size their
 * frame from it, and COPY_FREE_VARS reads its closure. */
static PyObject *function_with_code(PyObject *function, PyCodeObject *code)
{
    PyFunctionObject *original = (PyFunctionObject *)function;
    PyCodeObject *creation = code_to_create_with(code);
    if (creation == NULL) {
        return NULL;
    }
    PyFunctionObject *copy = (PyFunctionObject *)PyFunction_NewWithQualName(
        (PyObject *)creation, original->func_globals, original->func_qualname);
    if (copy == NULL) {
        return NULL;
    }
    if (creation != code) {
        Py_SETREF(copy->func_code, Py_NewRef((PyObject *)code));
    }
    Py_INCREF(original->func_doc);
    Py_SETREF(copy->func_doc, original->func_doc);
    Py_INCREF(original->func_name);
    Py_SETREF(copy->func_name, original->func_name);
    Py_XINCREF(original->func_closure);
    Py_XSETREF(copy->func_closure, original->func_closure);
    Py_XINCREF(original->func_defaults);
    Py_XSETREF(copy->func_defaults, original->func_defaults);
    Py_XINCREF(original->func_kwdefaults);
    Py_XSETREF(copy->func_kwdefaults, original->func_kwdefaults);
    return (PyObject *)copy;
}

/* Re-initialises a fresh frame for `code`, keeping its function (or taking
 * `new_function`, a new reference), its locals mapping and its link. All
 * slots become NULL. */
static void reinitialise_frame(PyThreadState *tstate, fh_frame *frame, PyCodeObject *code,
                               PyObject *new_function, int null_locals_from)
{
#if PY_VERSION_HEX >= 0x030E0000
    _PyStackRef function = frame->f_funcobj;
    if (new_function != NULL) {
        PyStackRef_CLOSE(function);
        function = PyStackRef_FromPyObjectSteal(new_function);
    }
    PyStackRef_CLOSE(frame->f_executable);
    _PyFrame_Initialize(tstate, frame, function, frame->f_locals, code, null_locals_from, frame->previous);
#elif PY_VERSION_HEX >= 0x030C0000
    PyObject *function = frame->f_funcobj;
    if (new_function != NULL) {
        Py_DECREF(function);
        function = new_function;
    }
#  if PY_VERSION_HEX >= 0x030D0000
    Py_DECREF(frame->f_executable);
#  else
    Py_DECREF(frame->f_code);
#  endif
    _PyFrame_Initialize(frame, (PyFunctionObject *)function, frame->f_locals, code, null_locals_from);
#else
    if (new_function != NULL) {
        Py_SETREF(frame->f_func, (PyFunctionObject *)new_function);
    }
    Py_SETREF(frame->f_code, (PyCodeObject *)Py_NewRef(code));
    frame->prev_instr = _PyCode_CODE(code) - 1;
    frame->stacktop = code->co_nlocalsplus;
    for (int i = null_locals_from; i < code->co_nlocalsplus; i++) {
        frame->localsplus[i] = NULL;
    }
#endif
}

/* 0: the frame now runs `code` (holding its own reference); 1: it does not fit in place;
 * -1: error (nothing changed). */
static int replace_in_place(PyThreadState *tstate, fh_frame *frame, PyCodeObject *code, const int *arg_map)
{
    PyCodeObject *original = frame_code(frame);
    PyObject **base = (PyObject **)frame;
    int new_size = frame_slot_count(code);
    if (base + frame_slot_count(original) != tstate->datastack_top
        || new_size >= tstate->datastack_limit - base) {
        return 1;
    }
    PyObject *new_function = NULL;
    if (code->co_flags & FH_GENERATOR_KINDS) {
        new_function = function_with_code(frame_function(frame), code);
        if (new_function == NULL) {
            return -1;
        }
    }
    int nargs = total_arguments(original);
    /* Arguments the replacement takes slot for slot stay where they are. */
    fh_slot inline_store[16];
    fh_slot *arguments = NULL;
    if (arg_map != NULL) {
        arguments = nargs <= 16 ? inline_store : PyMem_Malloc(sizeof(fh_slot) * nargs);
        if (arguments == NULL) {
            Py_XDECREF(new_function);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(arguments, frame->localsplus, sizeof(fh_slot) * nargs);
    }
    for (int i = nargs; i < original->co_nlocalsplus; i++) {
        slot_release(frame->localsplus[i]); /* NULL in a fresh frame */
    }
    tstate->datastack_top = base + new_size;
    reinitialise_frame(tstate, frame, code, new_function, arguments == NULL ? nargs : 0);
    if (arguments != NULL) {
        for (int i = 0; i < nargs; i++) {
            frame->localsplus[i] = arguments[mapped_argument(arg_map, i)];
        }
        if (arguments != inline_store) {
            PyMem_Free(arguments);
        }
    }
    return 0;
}

/* Calls the replacement as a function with the original's bound arguments. */
static PyObject *call_with_arguments(PyObject *function, fh_frame *frame, PyCodeObject *code,
                                     const int *arg_map)
{
    PyObject *varargs = NULL, *varkw = NULL;
    int slot = code->co_argcount + code->co_kwonlyargcount;
    if (code->co_flags & CO_VARARGS) {
        varargs = slot_object(frame->localsplus[mapped_argument(arg_map, slot++)]);
    }
    if (code->co_flags & CO_VARKEYWORDS) {
        varkw = slot_object(frame->localsplus[mapped_argument(arg_map, slot)]);
    }
    Py_ssize_t nextra = varargs ? PyTuple_GET_SIZE(varargs) : 0;
    Py_ssize_t nkw = code->co_kwonlyargcount + (varkw ? PyDict_GET_SIZE(varkw) : 0);
    Py_ssize_t npositional = code->co_argcount + nextra;
    PyObject **args = PyMem_Malloc(sizeof(PyObject *) * (npositional + nkw + 1));
    PyObject *kwnames = PyTuple_New(nkw);
    PyObject *result = NULL;
    if (args == NULL || kwnames == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = 0, k = 0;
    for (int i = 0; i < code->co_argcount; i++) {
        args[n++] = slot_object(frame->localsplus[mapped_argument(arg_map, i)]);
    }
    for (Py_ssize_t i = 0; i < nextra; i++) {
        args[n++] = PyTuple_GET_ITEM(varargs, i);
    }
    for (int i = code->co_argcount; i < code->co_argcount + code->co_kwonlyargcount; i++) {
        args[n++] = slot_object(frame->localsplus[mapped_argument(arg_map, i)]);
        PyTuple_SET_ITEM(kwnames, k++, Py_NewRef(PyTuple_GET_ITEM(code->co_localsplusnames, i)));
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (varkw != NULL && PyDict_Next(varkw, &pos, &key, &value)) {
        args[n++] = value;
        PyTuple_SET_ITEM(kwnames, k++, Py_NewRef(key));
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (args[i] == NULL) {
            PyErr_SetString(PyExc_SystemError, "framehook: an argument of the frame is unbound");
            goto done;
        }
    }
    replacement_call_begin(code);
    result = PyObject_Vectorcall(function, args, npositional, nkw ? kwnames : NULL);
    replacement_call_end();
done:
    PyMem_Free(args);
    Py_XDECREF(kwnames);
    return result;
}

static PyObject *run_by_call(PyThreadState *tstate, fh_frame *frame, const fh_decision *decision)
{
    PyCodeObject *code = (PyCodeObject *)decision->code;
    PyObject *function = frame_function(frame);
    PyObject *result = NULL;
    if (!(code->co_flags & CO_OPTIMIZED)) {
        PyObject *locals = frame->f_locals ? frame->f_locals : frame->f_globals;
        replacement_call_begin(code);
        result = PyEval_EvalCodeEx((PyObject *)code, frame->f_globals, locals, NULL, 0, NULL, 0,
                                   NULL, 0, NULL, PyFunction_GET_CLOSURE(function));
        replacement_call_end();
    } else {
        PyObject *replacement = function_with_code(function, code);
        if (replacement != NULL) {
            result = call_with_arguments(replacement, frame, code, decision->arg_map);
            Py_DECREF(replacement);
        }
    }
    discard_unrun_frame(tstate, frame);
    return result;
}

static PyObject *run_replacement(PyThreadState *tstate, fh_frame *frame,
                                 _PyFrameEvalFunction next, const fh_decision *decision)
{
    switch (replace_in_place(tstate, frame, (PyCodeObject *)decision->code, decision->arg_map)) {
    case 0:
        return next(tstate, frame, 0);
    case 1:
        return run_by_call(tstate, frame, decision);
    default:
        discard_unrun_frame(tstate, frame);
        return NULL;
    }
}
#endif /* FH_INTERP_FRAMES */

/* ------------------------------------------ frames laid out like CPython's */

/* A frame object for callbacks whose native code reads frame memory directly
 * (Paddle's guard tree casts the object it gets to its own frame proxy). It
 * holds its own references and never points at the live frame, so keeping it
 * after the callback is harmless.
 *  - 3.9/3.10: laid out as a PyFrameObject; f_code, f_globals, f_builtins and
 *    f_locals are set, everything else is zero.
 *  - 3.11+: laid out as Paddle's PyInterpreterFrameProxy: a pointer to an
 *    interpreter frame (ours, with f_globals, f_builtins and f_locals set),
 *    then the locals dict (read there on 3.13+). */
typedef struct {
#if FH_INTERP_FRAMES
    PyObject_HEAD
    _PyInterpreterFrame *frame;
    PyObject *locals;
    _PyInterpreterFrame storage;
#else
    PyFrameObject frame;
#endif
    PyObject *code;
} fh_layout_frame;

#if FH_INTERP_FRAMES
#  define LAYOUT_GLOBALS(self) ((self)->storage.f_globals)
#  define LAYOUT_BUILTINS(self) ((self)->storage.f_builtins)
#  define LAYOUT_LOCALS(self) ((self)->locals)
#else
#  define LAYOUT_GLOBALS(self) ((self)->frame.f_globals)
#  define LAYOUT_BUILTINS(self) ((self)->frame.f_builtins)
#  define LAYOUT_LOCALS(self) ((self)->frame.f_locals)
#endif

static void layout_frame_dealloc(PyObject *object)
{
    fh_layout_frame *self = (fh_layout_frame *)object;
    Py_XDECREF(self->code);
    Py_XDECREF(LAYOUT_GLOBALS(self));
    Py_XDECREF(LAYOUT_BUILTINS(self));
    Py_XDECREF(LAYOUT_LOCALS(self));
    Py_TYPE(object)->tp_free(object);
}

static PyObject *layout_frame_code(PyObject *self, void *closure)
{
    return Py_NewRef(((fh_layout_frame *)self)->code);
}

static PyObject *layout_frame_globals(PyObject *self, void *closure)
{
    return Py_NewRef(LAYOUT_GLOBALS((fh_layout_frame *)self));
}

static PyObject *layout_frame_builtins(PyObject *self, void *closure)
{
    return Py_NewRef(LAYOUT_BUILTINS((fh_layout_frame *)self));
}

static PyObject *layout_frame_locals(PyObject *self, void *closure)
{
    return Py_NewRef(LAYOUT_LOCALS((fh_layout_frame *)self));
}

static PyGetSetDef layout_frame_getset[] = {
    {"f_code", layout_frame_code, NULL, "the code about to run", NULL},
    {"f_globals", layout_frame_globals, NULL, NULL, NULL},
    {"f_builtins", layout_frame_builtins, NULL, NULL, NULL},
    {"f_locals", layout_frame_locals, NULL, "the values bound at entry, cells unboxed", NULL},
    {NULL},
};

static PyTypeObject fh_layout_frame_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framehook.LayoutFrame",
    .tp_doc = "A frame about to run, laid out as the interpreter's frames for native readers.",
    .tp_basicsize = sizeof(fh_layout_frame),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = layout_frame_dealloc,
    .tp_getset = layout_frame_getset,
};

PyObject *fh_view_layout_frame(const fh_frame_view *view, PyObject *code)
{
    static _Atomic int ready;
    if (!atomic_load(&ready)) {
        /* Concurrent first calls may both get here; PyType_Ready is idempotent. */
        if (PyType_Ready(&fh_layout_frame_type) < 0) {
            return NULL;
        }
        atomic_store(&ready, 1);
    }
    PyObject *locals = fh_view_locals(view);
    if (locals == NULL) {
        return NULL;
    }
    fh_layout_frame *self = PyObject_New(fh_layout_frame, &fh_layout_frame_type);
    if (self == NULL) {
        Py_DECREF(locals);
        return NULL;
    }
    /* Everything after the object header starts zeroed. */
    memset((char *)self + sizeof(PyObject), 0, sizeof(fh_layout_frame) - sizeof(PyObject));
    self->code = Py_NewRef(code);
    LAYOUT_GLOBALS(self) = Py_NewRef(fh_view_globals(view));
    LAYOUT_BUILTINS(self) = Py_NewRef(fh_view_builtins(view));
    LAYOUT_LOCALS(self) = locals;
#if FH_INTERP_FRAMES
    self->frame = &self->storage;
    self->storage.f_locals = locals; /* 3.11/3.12 readers look here */
#endif
    return (PyObject *)self;
}

/* ----------------------------------------------------------- observing */

static inline int frame_owned_by_generator(fh_frame *frame)
{
#if FH_INTERP_FRAMES
    return frame->owner == FRAME_OWNED_BY_GENERATOR;
#else
    return frame->f_gen != NULL;
#endif
}

/* Whether a frame starts from its beginning (else it resumes). */
static inline int frame_starts(fh_frame *frame, int throwflag)
{
#if FH_INTERP_FRAMES
    return !throwflag && frame_is_fresh(frame);
#else
    return !throwflag && frame->f_lasti == -1;
#endif
}

/* Whether a generator-owned frame that returned `result` only suspended. */
static int frame_suspended(fh_frame *frame)
{
#if FH_INTERP_FRAMES
    /* The frame lives inside its generator, which the resuming caller keeps alive. */
    PyGenObject *gen = (PyGenObject *)((char *)frame - offsetof(PyGenObject, gi_iframe));
#  if PY_VERSION_HEX >= 0x030D0000
    return FRAME_STATE_SUSPENDED(gen->gi_frame_state);
#  else
    return gen->gi_frame_state == FRAME_SUSPENDED;
#  endif
#elif PY_VERSION_HEX >= 0x030A0000
    return frame->f_state == FRAME_SUSPENDED;
#else
    return frame->f_stacktop != NULL;
#endif
}

/* Runs a frame (its replacement, when `decision` has one) and reports its
 * start and end to `observers`, which it releases. */
static PyObject *run_observed(PyThreadState *tstate, fh_frame *frame, int throwflag,
                              _PyFrameEvalFunction next, const fh_decision *decision,
                              void *observers)
{
    int replaced = decision != NULL && decision->code != NULL;
    /* The frame, and with it the last reference to its code, may be gone when
     * the exit is reported. */
    PyObject *original = decision != NULL ? Py_NewRef((PyObject *)frame_code(frame)) : NULL;
    PyObject *running = Py_NewRef(replaced ? decision->code : (PyObject *)frame_code(frame));
    int generator_owned = frame_owned_by_generator(frame);
    framehook_observe(observers, frame_starts(frame, throwflag) ? FRAMEHOOK_EVENT_CALL
                                                                : FRAMEHOOK_EVENT_RESUME,
                      running, original);
    PyObject *result = replaced ? run_replacement(tstate, frame, next, decision)
                                : next(tstate, frame, throwflag);
    int event = result == NULL ? FRAMEHOOK_EVENT_EXCEPTION
                : generator_owned && frame_suspended(frame) ? FRAMEHOOK_EVENT_YIELD
                : FRAMEHOOK_EVENT_RETURN;
    framehook_observe(observers, event, running, original);
    Py_DECREF(running);
    Py_XDECREF(original);
    framehook_release_observers(observers);
    return result;
}

/* ------------------------------------------------------- C stack guard */

/* With any PEP 523 function installed, every Python-to-Python call recurses in
 * C. 3.9-3.11 bound that depth only by the recursion limit, so a high limit
 * overflowed the C stack (3.9 and 3.11 at limit 20000, where the same program
 * without an eval function ends in RecursionError). There, frames refuse to
 * start once the thread's stack is nearly used up. From 3.12 on, CPython's
 * evaluator checks the C stack on every entry itself. */
#if PY_VERSION_HEX < 0x030C0000 && defined(__linux__)
#  define FH_C_STACK_GUARD 1
#include <pthread.h>

/* The thread's stack is [fh_stack_base, ...); frames start above fh_stack_floor. */
static FH_THREAD_LOCAL char *fh_stack_base;
static FH_THREAD_LOCAL char *fh_stack_floor;
static FH_THREAD_LOCAL int fh_stack_floor_known;

static void find_stack_floor(void)
{
    fh_stack_floor_known = 1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return;
    }
    void *base;
    size_t size;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
        /* Room to raise, unwind and run what a refused frame's caller does
         * next; debug builds' frames are several times larger. */
        size_t margin = size / 8;
        if (margin > 1024 * 1024) {
            margin = 1024 * 1024;
        }
        fh_stack_base = base;
        fh_stack_floor = (char *)base + margin;
    }
    pthread_attr_destroy(&attr);
}

static int c_stack_exhausted(void)
{
    if (!fh_stack_floor_known) {
        find_stack_floor();
    }
    /* Code running on a stack of its own (a fiber library's) is not checked. */
    char *here = __builtin_frame_address(0);
    return here >= fh_stack_base && here < fh_stack_floor;
}
#else
#  define FH_C_STACK_GUARD 0
static int c_stack_exhausted(void) { return 0; }
#endif

#if FH_C_STACK_GUARD
/* A few dozen frames deep the C stack cannot be near its end: the stack is
 * checked only past this depth. */
#define FH_STACK_CHECK_DEPTH 64

static inline int python_depth(PyThreadState *tstate)
{
#if PY_VERSION_HEX >= 0x030B0000
    return tstate->recursion_limit - tstate->recursion_remaining;
#else
    return tstate->recursion_depth;
#endif
}

/* Ends a frame that must not start for want of C stack, with RecursionError:
 * a fresh function frame is discarded unrun; a generator or coroutine frame
 * has the error thrown in, as generator.throw() would. Others (non-function
 * frames, which do not recurse by themselves) run. */
static FH_NOINLINE PyObject *refuse_frame(PyThreadState *tstate, fh_frame *frame,
                                           _PyFrameEvalFunction next)
{
    int generator_owned = frame_owned_by_generator(frame);
    if (!generator_owned && !frame_is_hookable(frame)) {
        return next(tstate, frame, 0);
    }
    PyErr_SetString(PyExc_RecursionError,
                    "maximum recursion depth exceeded (C stack nearly exhausted)");
    if (generator_owned) {
        return next(tstate, frame, 1);
    }
#if FH_INTERP_FRAMES
    if (replacement_called(frame_code(frame))) {
        fh_called_replacement = NULL;
    }
#endif
    discard_unrun_frame(tstate, frame);
    return NULL;
}
#endif /* FH_C_STACK_GUARD */

/* ------------------------------------------------------- the eval function */

/* Threads inside framehook.disabled(): hooks are asked nothing for them, which
 * only framehook's Rust code can tell per thread. */
static _Atomic int fh_disabled_thread_count;

void fh_disabled_threads_add(int delta) { atomic_fetch_add(&fh_disabled_thread_count, delta); }

int fh_disabled_threads(void) { return atomic_load(&fh_disabled_thread_count); }

/* Code states are read only in generations without these bits: no answer is
 * remembered while a hook observes (frames need reporting) or when the hooks
 * are a native chain (uncached). */
#define FH_GENERATION_UNREMEMBERED (FH_GENERATION_OBSERVING | FH_GENERATION_NATIVE_CHAIN)

/* Whether the hooks decided in `generation` to run every frame of the code
 * whose state is `state` unchanged: then nothing needs asking. */
static inline int declined_before(fh_code_state_head *state, unsigned long long generation)
{
    return state != NULL && atomic_load_explicit(&state->declined_in, memory_order_relaxed) == generation;
}

/* The replacement the hooks decided in `generation` to run for every frame of
 * the code whose state is `state`, when it takes the original's arguments as
 * they are: a new reference, or NULL. */
static inline PyObject *remembered_replacement(fh_code_state_head *state, unsigned long long generation)
{
    if (state == NULL || atomic_load_explicit(&state->replaced_in, memory_order_acquire) != generation) {
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    /* Another thread may drop it as it stores a newer decision. */
    PyObject *code = _Py_atomic_load_ptr(&state->replacement);
    return code != NULL && _Py_TryIncrefCompare(&state->replacement, code) ? code : NULL;
#else
    /* Stored and dropped under the GIL, which this thread holds. */
    return Py_XNewRef(state->replacement);
#endif
}

void fh_prepare_lock_free_read(PyObject *object)
{
#ifdef Py_GIL_DISABLED
    /* What _Py_TryIncrefCompare needs of objects another thread may free. */
    _PyObject_SetMaybeWeakref(object);
#else
    (void)object;
#endif
}

/* Runs a frame as decided (by the hooks or remembered) and releases the decision. */
static PyObject *run_decided(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                             fh_decision *decision)
{
    PyObject *result;
    if (decision->observers != NULL) {
        result = run_observed(tstate, frame, 0, next, decision, decision->observers);
    } else if (decision->code != NULL) {
        result = run_replacement(tstate, frame, next, decision);
    } else {
        result = next(tstate, frame, 0);
    }
    if (decision->after_frame != NULL) {
        framehook_finish(decision->after_frame);
    }
    Py_XDECREF(decision->code);
    if (decision->arg_map_owner != NULL) {
        framehook_release(decision->arg_map_owner);
    }
    return result;
}

static inline void view_of(fh_frame_view *view, PyThreadState *tstate, fh_frame *frame, void *context)
{
    view->tstate = tstate;
    view->frame = frame;
    view->code = frame_code(frame);
#if FH_INTERP_FRAMES
    view->caller = thread_current_frame(tstate);
#else
    view->caller = NULL;
#endif
    view->context = context;
}

/* A frame the hooks are asked about through framehook's Rust code. */
static FH_NOINLINE PyObject *dispatch_frame(PyThreadState *tstate, fh_frame *frame,
                                             _PyFrameEvalFunction next, void *context)
{
    fh_frame_view view;
    view_of(&view, tstate, frame, context);
    fh_decision decision = {NULL, NULL, NULL, NULL, NULL};
    if (framehook_dispatch(&view, &decision) < 0) {
        discard_unrun_frame(tstate, frame);
        return NULL;
    }
    return run_decided(tstate, frame, next, &decision);
}

/* A frame whose remembered replacement runs: no hook is asked. */
static FH_NOINLINE PyObject *run_remembered(PyThreadState *tstate, fh_frame *frame,
                                             _PyFrameEvalFunction next, PyObject *replacement)
{
#if FH_INTERP_FRAMES
    /* The usual case, with nothing to do after the frame: it runs from here. */
    int in_place = replace_in_place(tstate, frame, (PyCodeObject *)replacement, NULL);
    if (in_place <= 0) {
        Py_DECREF(replacement); /* the frame holds it, if it runs */
        if (in_place < 0) {
            discard_unrun_frame(tstate, frame);
            return NULL;
        }
        return next(tstate, frame, 0);
    }
#endif
    fh_decision decision = {replacement, NULL, NULL, NULL, NULL};
    return run_decided(tstate, frame, next, &decision);
}

/* ------------------------------------------------ native chains */

#ifdef Py_GIL_DISABLED
#  define CHAIN_REFS_ADD(chain, delta) atomic_fetch_add((_Atomic Py_ssize_t *)&(chain)->refs, (delta))
#else
/* Retained and released under the GIL. */
#  define CHAIN_REFS_ADD(chain, delta) (((chain)->refs += (delta)) - (delta))
#endif

fh_native_chain *fh_native_chain_new(Py_ssize_t count, unsigned long long generation)
{
    fh_native_chain *chain = PyMem_RawCalloc(1, sizeof(fh_native_chain) + (size_t)count * sizeof(fh_native_link));
    if (chain == NULL) {
        return NULL;
    }
    chain->refs = 1;
    chain->generation = generation;
    chain->count = count;
    return chain;
}

static void native_chain_release(fh_native_chain *chain)
{
    if (CHAIN_REFS_ADD(chain, -1) == 1) {
        framehook_native_chain_release_owners(chain);
        PyMem_RawFree(chain);
    }
}

void fh_publish_native_chain(fh_context_head *context, fh_native_chain *chain)
{
    fh_native_chain *previous = atomic_exchange(&context->native_chain, chain);
    if (previous == NULL) {
        return;
    }
#ifdef Py_GIL_DISABLED
    /* A reader that loaded `previous` retains it before it stops counting. */
    while (atomic_load(&context->native_chain_readers) != 0) {
        sched_yield();
    }
#endif
    native_chain_release(previous);
}

/* The context's native chain for `generation`, retained, or NULL. */
static inline fh_native_chain *native_chain_for(fh_context_head *context, unsigned long long generation)
{
#ifdef Py_GIL_DISABLED
    atomic_fetch_add(&context->native_chain_readers, 1);
#endif
    fh_native_chain *chain = atomic_load_explicit(&context->native_chain, memory_order_acquire);
    if (chain != NULL && chain->generation == generation) {
        (void)CHAIN_REFS_ADD(chain, 1);
    } else {
        chain = NULL;
    }
#ifdef Py_GIL_DISABLED
    atomic_fetch_sub(&context->native_chain_readers, 1);
#endif
    return chain;
}

/* Link `index` of a native chain did not decline (`status` < 0: it failed,
 * its exception set; else `replacement`, a new reference, is its answer):
 * framehook's Rust code settles it and asks the rest, then the frame runs as
 * decided. Releases the chain. */
static FH_NOINLINE PyObject *native_chain_answered(fh_frame_view *view, _PyFrameEvalFunction next,
                                                   fh_native_chain *chain, Py_ssize_t index,
                                                   int status, PyObject *replacement)
{
    fh_decision decision = {NULL, NULL, NULL, NULL, NULL};
    int dispatched = framehook_dispatch_native_rest(view, &decision, chain, index, status, replacement);
    native_chain_release(chain);
    if (dispatched < 0) {
        discard_unrun_frame(view->tstate, view->frame);
        return NULL;
    }
    return run_decided(view->tstate, view->frame, next, &decision);
}

/* A frame whose hooks are all native: they are called from here, as
 * framehook's Rust code would call them, until one does not decline. */
static inline PyObject *ask_native_chain(PyThreadState *tstate, fh_frame *frame,
                                              _PyFrameEvalFunction next, void *context,
                                              fh_native_chain *chain)
{
    fh_frame_view view;
    view_of(&view, tstate, frame, context);
    fh_native_frame native = {&view, (PyObject *)view.code, (PyObject *)view.code};
    enter_hook_context(tstate);
    for (Py_ssize_t i = 0; i < chain->count; i++) {
        PyObject *replacement = NULL;
        int status = chain->links[i].hook(chain->links[i].user_data, &native, &replacement);
        if (status < 0 || (replacement != NULL && replacement != native.current)) {
            leave_hook_context(tstate);
            return native_chain_answered(&view, next, chain, i, status, replacement);
        }
        Py_XDECREF(replacement);
    }
    leave_hook_context(tstate);
    native_chain_release(chain);
    return next(tstate, frame, 0);
}

/* A frame that is not hooked (resumed, thrown into, not a function's), while
 * some hook observes. */
static FH_NOINLINE PyObject *observe_passing_frame(PyThreadState *tstate, fh_frame *frame,
                                                    int throwflag, _PyFrameEvalFunction next,
                                                    void *context)
{
    void *observers = framehook_passthrough_observers(context);
    if (observers == NULL) {
        return next(tstate, frame, throwflag);
    }
    return run_observed(tstate, frame, throwflag, next, NULL, observers);
}

/* Every frame fh_eval does not pass straight through. `state` is the code's
 * state, read only in generations without FH_GENERATION_UNREMEMBERED bits
 * (else NULL). Whatever needs a stack frame of its own is tail-called. */
static FH_NOINLINE PyObject *eval_frame(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                        fh_chain_entry *entry, fh_code_state_head *state,
                                        unsigned long long generation)
{
    _PyFrameEvalFunction next = next_eval(entry);
#if FH_C_STACK_GUARD
    if (!throwflag && python_depth(tstate) > FH_STACK_CHECK_DEPTH && c_stack_exhausted()) {
        return refuse_frame(tstate, frame, next);
    }
#endif
    fh_context_head *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    PyCodeObject *code = frame_code(frame);
    /* Declined before: whatever the frame (resumed, thrown into, started by a
     * hook or a tracer), it passes through. */
    if (declined_before(state, generation)) {
#if FH_INTERP_FRAMES
        if (replacement_called(code)) {
            fh_called_replacement = NULL;
        }
#endif
        return next(tstate, frame, throwflag);
    }
    if (tstate->tracing) {
        return next(tstate, frame, throwflag);
    }
    if (throwflag || !frame_is_hookable(frame)) {
        if (!(generation & FH_GENERATION_OBSERVING)) {
            return next(tstate, frame, throwflag);
        }
        return observe_passing_frame(tstate, frame, throwflag, next, context);
    }
#if FH_INTERP_FRAMES
    if (replacement_called(code)) {
        /* The replacement's own frame (run_by_call): it runs as it is. */
        fh_called_replacement = NULL;
        return next(tstate, frame, 0);
    }
#endif
    if (atomic_load_explicit(&fh_disabled_thread_count, memory_order_relaxed) == 0) {
        PyObject *replacement = remembered_replacement(state, generation);
        if (replacement != NULL) {
            return run_remembered(tstate, frame, next, replacement);
        }
    }
    return dispatch_frame(tstate, frame, next, context);
}

/* A frame of a generation whose hooks are a native chain, when they are asked
 * about it from here; every other case (not hooked, or asked through
 * framehook's Rust code) is eval_frame's. */
static FH_NOINLINE PyObject *native_chain_frame(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                                fh_chain_entry *entry, unsigned long long generation)
{
    fh_context_head *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    fh_native_chain *chain;
    if (tstate->tracing || throwflag || !frame_is_hookable(frame)
#if FH_C_STACK_GUARD
        || (python_depth(tstate) > FH_STACK_CHECK_DEPTH && c_stack_exhausted())
#endif
#if FH_INTERP_FRAMES
        || replacement_called(frame_code(frame))
#endif
        || atomic_load_explicit(&fh_disabled_thread_count, memory_order_relaxed) != 0
        || (chain = native_chain_for(context, generation)) == NULL) {
        return eval_frame(tstate, frame, throwflag, entry, NULL, generation);
    }
    return ask_native_chain(tstate, frame, next_eval(entry), context, chain);
}

/* The eval function. Its own work is the fast path of most frames: code the
 * hooks declined before. It needs no stack frame of its own; anything else
 * is eval_frame's. */
static PyObject *fh_eval(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    fh_chain_entry *entry = chain_entry(tstate->interp);
    /* No entry: ours was taken out of the interpreter's chain. */
    if (entry == NULL) {
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    fh_context_head *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    unsigned long long generation = atomic_load_explicit(&context->generation, memory_order_acquire);
    fh_code_state_head *state = NULL;
    if (!(generation & FH_GENERATION_UNREMEMBERED)) {
        state = code_extra((PyObject *)frame_code(frame), context->code_extra_index);
        if (declined_before(state, generation)
#if FH_C_STACK_GUARD
            && python_depth(tstate) <= FH_STACK_CHECK_DEPTH
#endif
#if FH_INTERP_FRAMES
            && !atomic_load_explicit(&fh_replacement_calls, memory_order_relaxed)
#endif
        ) {
            return next_eval(entry)(tstate, frame, throwflag);
        }
    } else if (generation & FH_GENERATION_NATIVE_CHAIN) {
        return native_chain_frame(tstate, frame, throwflag, entry, generation);
    }
    return eval_frame(tstate, frame, throwflag, entry, state, generation);
}

/* ------------------------------------------- test-only foreign eval function */

static _Atomic unsigned long long fh_test_calls;
static _Atomic(_PyFrameEvalFunction) fh_test_previous; /* CPython's default included */

static PyObject *fh_test_passthrough(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    atomic_fetch_add_explicit(&fh_test_calls, 1, memory_order_relaxed);
    return atomic_load(&fh_test_previous)(tstate, frame, throwflag);
}

int fh_test_install_passthrough(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current == (_PyFrameEvalFunction)fh_test_passthrough) {
        return 1;
    }
    atomic_store(&fh_test_previous, current);
    _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)fh_test_passthrough);
    return 0;
}

/* Puts `previous` back if `ours` is the current eval
 * function: 1 if it was, 0 if another function is in place (left alone). */
static int restore_if_current(_PyFrameEvalFunction ours, _PyFrameEvalFunction previous)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (_PyInterpreterState_GetEvalFrameFunc(interp) != ours) {
        return 0;
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, previous);
    return 1;
}

int fh_test_uninstall_passthrough(void)
{
    return restore_if_current((_PyFrameEvalFunction)fh_test_passthrough, atomic_load(&fh_test_previous));
}

unsigned long long fh_test_passthrough_calls(void) { return atomic_load(&fh_test_calls); }

void *fh_test_passthrough_function(void) { return (void *)fh_test_passthrough; }

/* -------------------------------------- bench-only floor eval function */

/* The cheapest PEP 523 function there is: it hands every frame to CPython's
 * default evaluator and does nothing else. Benchmarks measure framehook's
 * overhead against it (the cost of any PEP 523 function at all). */
static PyObject *fh_bench_floor(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

int fh_bench_install_floor(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current == (_PyFrameEvalFunction)fh_bench_floor) {
        return 1;
    }
    if (current != _PyEval_EvalFrameDefault) {
        PyErr_SetString(PyExc_RuntimeError,
                        "framehook: the floor eval function goes only over CPython's default one");
        return -1;
    }
    _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)fh_bench_floor);
    return 0;
}

int fh_bench_uninstall_floor(void)
{
    return restore_if_current((_PyFrameEvalFunction)fh_bench_floor, _PyEval_EvalFrameDefault);
}
