/* The eval function: installing it per interpreter, and what it does with
 * every frame.
 *
 * Its own work is the fast path of most frames: replaying what the hooks
 * decided before for the frame's code (run it unchanged, or run a remembered
 * replacement), or calling the native chain the Rust side published. Every
 * decision is taken on the Rust side (src/hookapi/dispatch.rs), reached
 * through the upcalls of the interpreter's context; this file only replays
 * decisions and decides, in one place (frame_askable), which frames hooks may
 * be asked about at all. */
#include "shim_internal.h"

#ifdef Py_GIL_DISABLED
#  include "internal/pycore_object.h" /* _Py_TryIncrefCompare, _PyObject_SetMaybeWeakref */
#endif

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
 * every frame. Interpreters with their own GIL install at the same time: an
 * entry is claimed with a compare-and-swap, filled, then published by storing
 * its interpreter; it is read without a lock, and given back when framehook's
 * function leaves the interpreter's chain or the interpreter is finalised. */
#define FH_MAX_INTERPRETERS 64
typedef struct {
    _Atomic int claimed;
    _Atomic(PyInterpreterState *) interp;
    _Atomic(_PyFrameEvalFunction) previous; /* never NULL: CPython's default included */
    _Atomic int previous_specializing;      /* its fh_eval_specializing, put back with it */
    _Atomic(fh_context *) context;          /* what every upcall gets as view->context */
} fh_chain_entry;

static fh_chain_entry fh_chain[FH_MAX_INTERPRETERS];

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

/* Puts framehook's function in place over `previous`, remembering whether the
 * loop specialized under it. The loop keeps specializing under ours when CPython's
 * default loop runs the frames it hands on; over another evaluator, only if that
 * one asked for it (it may run frames with its own loop). */
static void put_ours_over(PyInterpreterState *interp, fh_chain_entry *entry, _PyFrameEvalFunction previous)
{
    int previous_specializing = fh_eval_specializing(interp);
    atomic_store(&entry->previous, previous);
    atomic_store(&entry->previous_specializing, previous_specializing);
    fh_set_eval_function(interp, (_PyFrameEvalFunction)fh_eval,
                         previous == _PyEval_EvalFrameDefault ? 1 : previous_specializing == 1);
}

static void put_previous_back(PyInterpreterState *interp, fh_chain_entry *entry)
{
    fh_set_eval_function(interp, atomic_load(&entry->previous), atomic_load(&entry->previous_specializing) == 1);
}

int fh_install(fh_context *context)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    fh_chain_entry *entry = chain_entry(interp);
    if (entry != NULL) {
        _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
        if (current != (_PyFrameEvalFunction)fh_eval && displaced_for_good(entry, current)) {
            /* The tool that installed its function over ours has put back
             * what ours replaced (or the default): nothing calls ours any more. */
            atomic_store(&entry->context, context);
            put_ours_over(interp, entry, current);
            return 0;
        }
        return 1; /* ours is in the interpreter's chain already */
    }
    for (int i = 0; i < FH_MAX_INTERPRETERS; i++) {
        int unclaimed = 0;
        if (atomic_compare_exchange_strong(&fh_chain[i].claimed, &unclaimed, 1)) {
            _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
            atomic_store(&fh_chain[i].previous, current);
            atomic_store(&fh_chain[i].context, context);
            atomic_store_explicit(&fh_chain[i].interp, interp, memory_order_release);
            put_ours_over(interp, &fh_chain[i], current);
            return 0;
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "framehook: too many interpreters with hooks installed");
    return -1;
}

static void release_entry(fh_chain_entry *entry)
{
    atomic_store_explicit(&entry->interp, NULL, memory_order_release);
    atomic_store_explicit(&entry->claimed, 0, memory_order_release);
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
        release_entry(entry);
        return 1;
    }
    if (current != (_PyFrameEvalFunction)fh_eval) {
        /* Another tool installed its function over ours and calls ours as its
         * previous one: stay in the chain, passing frames through. */
        return 0;
    }
    put_previous_back(interp, entry);
    release_entry(entry);
    return 1;
}

int fh_forget_interpreter(void)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    fh_chain_entry *entry = chain_entry(interp);
    if (entry != NULL) {
        if (_PyInterpreterState_GetEvalFrameFunc(interp) == (_PyFrameEvalFunction)fh_eval) {
            put_previous_back(interp, entry);
        }
        /* A function installed over ours that still calls ours now reaches
         * CPython's default evaluator through it (see fh_eval). */
        release_entry(entry);
    }
    return fh_interp_finalizing(interp);
}

int fh_interpreter_finalizing(void) { return fh_interp_finalizing(PyInterpreterState_Get()); }

long long fh_interpreter_id(void) { return (long long)PyInterpreterState_GetID(PyInterpreterState_Get()); }

const PyModuleDef_Slot fh_interpreter_module_slots[2] = {FH_INTERPRETER_MODULE_SLOTS};

void fh_enter_hook_context(PyThreadState *tstate) { fh_enter_tracing(tstate); }

void fh_leave_hook_context(PyThreadState *tstate) { fh_leave_tracing(tstate); }

int fh_code_has_exception_table(PyObject *code)
{
    return PyCode_Check(code) && fh_code_has_exception_entries((PyCodeObject *)code);
}

int fh_is_immortal(PyObject *object) { return fh_compat_is_immortal(object); }

int fh_type_is_mutable(PyObject *type)
{
    unsigned long flags = PyType_GetFlags((PyTypeObject *)type);
#ifdef Py_TPFLAGS_IMMUTABLETYPE
    if (flags & Py_TPFLAGS_IMMUTABLETYPE) {
        return 0;
    }
#endif
    return (flags & Py_TPFLAGS_HEAPTYPE) != 0;
}

PyObject *fh_type_lookup(PyObject *type, PyObject *name)
{
    return fh_compat_type_lookup((PyTypeObject *)type, name);
}

int fh_lookup_attr(PyObject *object, PyObject *name, PyObject **result)
{
    return fh_compat_lookup_attr(object, name, result);
}

unsigned int fh_type_version(PyObject *type, int assign)
{
    PyTypeObject *cls = (PyTypeObject *)type;
    if (assign && fh_compat_type_version(cls) == 0) {
        fh_compat_assign_type_version(cls);
    }
    return fh_compat_type_version(cls);
}

int fh_code_interns_constants(void) { return FH_CODE_INTERNS_CONSTANTS; }

int fh_code_keep_constants(PyObject *code, PyObject *given)
{
    if (!PyCode_Check(code) || !PyTuple_CheckExact(given)) {
        PyErr_SetString(PyExc_TypeError, "fh_code_keep_constants() takes a code object and a tuple");
        return -1;
    }
#if FH_CODE_INTERNS_CONSTANTS
    PyObject *consts = ((PyCodeObject *)code)->co_consts;
    Py_ssize_t count = PyTuple_GET_SIZE(consts);
    if (count == 0) {
        return 0; /* the empty tuple is one object */
    }
    if (consts == given || count != PyTuple_GET_SIZE(given)) {
        PyErr_SetString(PyExc_ValueError, "fh_code_keep_constants() takes a copy of the code's constants");
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *kept = PyTuple_GET_ITEM(given, i);
        PyObject *interned = PyTuple_GET_ITEM(consts, i);
        /* Strings are interned by every build, the compiled code's too. */
        if (kept != interned && !PyUnicode_CheckExact(kept)) {
            PyTuple_SET_ITEM(consts, i, Py_NewRef(kept));
            Py_DECREF(interned);
        }
    }
#endif
    return 0;
}

/* Threads inside framehook.disabled(): hooks are asked nothing for them, which
 * only the Rust side can tell per thread. */
static _Atomic int fh_disabled_thread_count;

void fh_disabled_threads_add(int delta) { atomic_fetch_add(&fh_disabled_thread_count, delta); }

int fh_disabled_threads(void) { return atomic_load(&fh_disabled_thread_count); }

/* This thread's armed scopes (contract.h): read by the eval function only. */
static _Thread_local int fh_armed_scopes;

void fh_arm_thread(int delta) { fh_armed_scopes += delta; }

/* --------------------------------------------------- remembered decisions */

/* Code states are read only in generations without these bits (contract.h). */
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

/* ----------------------------------------------------- which frames are asked */

/* The one rule for which frames may be handed to hooks: not a frame started
 * by a hook, an observer or a tracer (the thread is tracing); not entered with
 * an exception; hookable (compat.h: not a resumed generator or coroutine, a
 * function's frame); not the frame of a replacement called as a function.
 * (Whether the thread is inside framehook.disabled() only the Rust side can
 * tell.) */
static inline int frame_askable(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    return !tstate->tracing && !throwflag && fh_frame_is_hookable(frame)
           && !fh_replacement_called(fh_frame_code(frame));
}

/* Of the frames that may not be asked, those observers still see: resumed
 * generators and coroutines, frames entered with an exception, frames that
 * are not a function's. The others (started by a hook, an observer or a
 * tracer; a replacement's own frame) run unseen. */
static inline int frame_unhooked_but_seen(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    return !tstate->tracing && (throwflag || !fh_frame_is_hookable(frame));
}

/* ------------------------------------------------------- running as decided */

/* Runs a frame as decided (by the hooks or remembered) and releases the decision. */
static PyObject *run_decided(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                             fh_context *context, fh_decision *decision)
{
    PyObject *result;
    if (decision->observers != NULL) {
        result = fh_run_observed(tstate, frame, next, context, decision);
    } else if (decision->code != NULL) {
        result = fh_run_replacement(tstate, frame, next, decision);
    } else {
        result = next(tstate, frame, 0);
    }
    if (decision->after_frame != NULL) {
        context->upcalls.finish(decision->after_frame);
    }
    Py_XDECREF(decision->code);
    if (decision->arg_map_owner != NULL) {
        context->upcalls.release(decision->arg_map_owner);
    }
    return result;
}

static inline void view_of(fh_frame_view *view, PyThreadState *tstate, fh_frame *frame, fh_context *context)
{
    view->tstate = tstate;
    view->frame = frame;
    view->code = fh_frame_code(frame);
#if FH_INTERP_FRAMES
    view->caller = fh_thread_current_frame(tstate);
#else
    view->caller = NULL;
#endif
    view->context = context;
}

/* A frame the hooks are asked about on the Rust side. */
static FH_NOINLINE PyObject *dispatch_frame(PyThreadState *tstate, fh_frame *frame,
                                             _PyFrameEvalFunction next, fh_context *context)
{
    fh_frame_view view;
    view_of(&view, tstate, frame, context);
    fh_decision decision = {NULL, NULL, NULL, NULL, NULL};
    if (context->upcalls.dispatch(&view, &decision) < 0) {
        fh_discard_unrun_frame(tstate, frame);
        return NULL;
    }
    return run_decided(tstate, frame, next, context, &decision);
}

/* ------------------------------------------------------------ native chains */

/* Link `index` of a native chain did not give a plain decline (`status` < 0:
 * it failed, its exception set; else `replacement`, a new reference, is its
 * answer): the Rust side settles it and asks the rest, then the frame runs as
 * decided. Releases the chain. */
static FH_NOINLINE PyObject *native_chain_answered(fh_frame_view *view, _PyFrameEvalFunction next,
                                                   fh_native_chain *chain, Py_ssize_t index,
                                                   int status, PyObject *replacement)
{
    fh_context *context = view->context;
    fh_decision decision = {NULL, NULL, NULL, NULL, NULL};
    int dispatched = context->upcalls.dispatch_native_rest(view, &decision, chain, index, status, replacement);
    fh_native_chain_release(chain);
    if (dispatched < 0) {
        fh_discard_unrun_frame(view->tstate, view->frame);
        return NULL;
    }
    return run_decided(view->tstate, view->frame, next, context, &decision);
}

/* Calls the chain's hooks in order, as the Rust side published them, while
 * each gives a plain decline; the first other answer goes to the Rust side. */
static inline PyObject *ask_native_chain(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                                         fh_context *context, fh_native_chain *chain)
{
    fh_frame_view view;
    view_of(&view, tstate, frame, context);
    fh_native_frame native = {&view, (PyObject *)view.code, (PyObject *)view.code};
    fh_enter_tracing(tstate);
    for (Py_ssize_t i = 0; i < chain->count; i++) {
        PyObject *replacement = NULL;
        int status = chain->links[i].hook(chain->links[i].user_data, &native, &replacement);
        if (status < 0 || replacement != NULL) {
            fh_leave_tracing(tstate);
            return native_chain_answered(&view, next, chain, i, status, replacement);
        }
    }
    /* Released while still running as a hook: the last reference releases
     * hooks, whose user data's free functions run unhooked, as hook code does. */
    fh_native_chain_release(chain);
    fh_leave_tracing(tstate);
    return next(tstate, frame, 0);
}

/* ------------------------------------------------------- the eval function */

/* A frame that is not hooked (resumed, thrown into, not a function's), while
 * some hook observes. */
static FH_NOINLINE PyObject *observe_passing_frame(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                                    _PyFrameEvalFunction next, fh_context *context)
{
    void *observers = context->upcalls.passthrough_observers(context);
    if (observers == NULL) {
        return next(tstate, frame, throwflag);
    }
    return fh_run_observed_unhooked(tstate, frame, throwflag, next, context, observers);
}

/* A frame hooks may not be asked about runs as it is, seen by observers if
 * it is one they see. */
static FH_NOINLINE PyObject *run_unasked(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                         _PyFrameEvalFunction next, fh_context *context,
                                         unsigned long long generation)
{
    if (frame_unhooked_but_seen(tstate, frame, throwflag)) {
        if (generation & FH_GENERATION_OBSERVING) {
            return observe_passing_frame(tstate, frame, throwflag, next, context);
        }
    } else if (!tstate->tracing) {
        /* Neither unhooked nor started by a hook: a replacement's own frame, now arrived. */
        fh_forget_called_replacement(fh_frame_code(frame));
    }
    return next(tstate, frame, throwflag);
}

#if FH_C_STACK_GUARD
/* Ends a frame that must not start for want of C stack, with RecursionError:
 * a fresh function frame is discarded unrun; a generator or coroutine frame
 * has the error thrown in, as generator.throw() would. Others (non-function
 * frames, which do not recurse by themselves) run. */
static FH_NOINLINE PyObject *refuse_frame(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next)
{
    int generator_owned = fh_frame_owned_by_generator(frame);
    if (!generator_owned && !fh_frame_is_hookable(frame)) {
        return next(tstate, frame, 0);
    }
    PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded (C stack nearly exhausted)");
    if (generator_owned) {
        return next(tstate, frame, 1);
    }
    fh_forget_called_replacement(fh_frame_code(frame));
    fh_discard_unrun_frame(tstate, frame);
    return NULL;
}

static inline int stack_nearly_exhausted(PyThreadState *tstate)
{
    return fh_python_depth(tstate) > FH_STACK_CHECK_DEPTH && fh_c_stack_exhausted();
}
#endif

/* Every frame fh_eval does not pass straight through. `state` is the code's
 * state, read only in generations without FH_GENERATION_UNREMEMBERED bits
 * (else NULL). Whatever needs a stack frame of its own is tail-called. */
static FH_NOINLINE PyObject *eval_frame(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                        fh_chain_entry *entry, fh_code_state_head *state,
                                        unsigned long long generation)
{
    _PyFrameEvalFunction next = next_eval(entry);
#if FH_C_STACK_GUARD
    if (!throwflag && stack_nearly_exhausted(tstate)) {
        return refuse_frame(tstate, frame, next);
    }
#endif
    fh_context *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    PyCodeObject *code = fh_frame_code(frame);
    /* Declined before: whatever the frame (resumed, thrown into, started by a
     * hook or a tracer), it passes through. */
    if (declined_before(state, generation)) {
        fh_forget_called_replacement(code);
        return next(tstate, frame, throwflag);
    }
    if (!frame_askable(tstate, frame, throwflag)) {
        return run_unasked(tstate, frame, throwflag, next, context, generation);
    }
    if (atomic_load_explicit(&fh_disabled_thread_count, memory_order_relaxed) == 0) {
        PyObject *replacement = remembered_replacement(state, generation);
        if (replacement != NULL) {
            return fh_run_remembered(tstate, frame, next, replacement);
        }
    }
    return dispatch_frame(tstate, frame, next, context);
}

/* A frame of a generation whose hooks are a native chain, when they are asked
 * about it from here; every other case (not askable, or asked on the Rust
 * side) is eval_frame's. */
static FH_NOINLINE PyObject *native_chain_frame(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                                fh_chain_entry *entry, unsigned long long generation)
{
    fh_context *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    fh_native_chain *chain;
    if (!frame_askable(tstate, frame, throwflag)
#if FH_C_STACK_GUARD
        || stack_nearly_exhausted(tstate)
#endif
        || atomic_load_explicit(&fh_disabled_thread_count, memory_order_relaxed) != 0
        || (chain = fh_native_chain_for(context, generation)) == NULL) {
        return eval_frame(tstate, frame, throwflag, entry, NULL, generation);
    }
    return ask_native_chain(tstate, frame, next_eval(entry), context, chain);
}

/* The eval function. Its own work is the fast path of most frames: code the
 * hooks declined before. It needs no stack frame of its own; anything else
 * is eval_frame's. */
PyObject *fh_eval(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    fh_chain_entry *entry = chain_entry(tstate->interp);
    /* No entry: ours was taken out of the interpreter's chain. */
    if (entry == NULL) {
        return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
    }
    fh_context *context = atomic_load_explicit(&entry->context, memory_order_relaxed);
    unsigned long long generation = atomic_load_explicit(&context->generation, memory_order_acquire);
    fh_code_state_head *state = NULL;
    if (!(generation & FH_GENERATION_UNREMEMBERED)) {
        /* Outside every armed scope, scoped hooks decline every frame. */
        int unarmed = (generation & FH_GENERATION_SCOPED) && fh_armed_scopes == 0;
        if (!unarmed) {
            state = fh_code_extra((PyObject *)fh_frame_code(frame), context->code_extra_index);
        }
        if ((unarmed || declined_before(state, generation))
#if FH_C_STACK_GUARD
            && fh_python_depth(tstate) <= FH_STACK_CHECK_DEPTH
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
