/* Every CPython-version check of framehook, as small inline accessors.
 *
 * The shim is compiled against the internal headers of exactly one interpreter
 * (see build.rs). Only this header tests PY_VERSION_HEX; the other C files use
 * the accessors and the capability macros defined here (FH_INTERP_FRAMES, ...),
 * and no Rust file tests the version at all. A new CPython minor version is
 * reviewed here first: building against one not reviewed yet stops below. */
#ifndef FRAMEHOOK_COMPAT_H
#define FRAMEHOOK_COMPAT_H

/* CPython's internal headers assert what its own release builds do not check:
 * the shim's asserts follow the interpreter's build, not the C compiler's default. */
#include <pyconfig.h>
#if !defined(Py_DEBUG) && !defined(NDEBUG)
#  define NDEBUG
#endif
#include <Python.h>
#include <frameobject.h>
#include "internal/pycore_interp.h" /* PyInterpreterState's fields */

#if PY_VERSION_HEX < 0x03090000
#  error "framehook supports CPython 3.9 and newer"
#endif
#if PY_VERSION_HEX >= 0x03100000
#  error "framehook has not been reviewed for this CPython version (3.16 or newer): review src/pep523_backend/compat.h (frame layout, frame ownership, stack references, co_extra, tracing, specialization) before building for it"
#endif

/* ------------------------------------------------------------ capabilities */

/* 3.11+: frames are _PyInterpreterFrame on the thread's data stack, arriving
 * fresh (only arguments bound); before, PyFrameObjects arriving set up. */
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
#  if PY_VERSION_HEX >= 0x030F0000
#    include "internal/pycore_tstate.h" /* _PyThreadStateImpl.generator_return_kind */
#  endif
typedef _PyInterpreterFrame fh_frame;
#else
#  define FH_INTERP_FRAMES 0
typedef PyFrameObject fh_frame;
#endif

/* What framehook's module declares about interpreters (two module slots,
 * {0, NULL} where there is nothing to declare): 3.12+ loads in sub-interpreters
 * with their own GIL (PEP 684); 3.13+ runs without the GIL. */
#if PY_VERSION_HEX >= 0x030D0000
#  define FH_INTERPRETER_MODULE_SLOTS \
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED}, {Py_mod_gil, Py_MOD_GIL_NOT_USED}
#elif PY_VERSION_HEX >= 0x030C0000
#  define FH_INTERPRETER_MODULE_SLOTS \
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED}, {0, NULL}
#else
#  define FH_INTERPRETER_MODULE_SLOTS {0, NULL}, {0, NULL}
#endif

/* 3.12+: the evaluator checks the C stack on every entry itself; before, a
 * PEP 523 function recursing in C is bounded only by the recursion limit. */
#define FH_EVAL_CHECKS_C_STACK (PY_VERSION_HEX >= 0x030C0000)

/* Free-threaded 3.13 gives a function of top-level code (no CO_NESTED) deferred
 * reference counting, or makes it immortal once a second thread has run
 * (gh-117696): a copy made per call would be freed only by the GC, or never. */
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX < 0x030E0000
#  define FH_TOP_LEVEL_FUNCTIONS_DEFERRED 1
#else
#  define FH_TOP_LEVEL_FUNCTIONS_DEFERRED 0
#endif

/* Free-threaded 3.13+ swaps a new code object's constants that are not immortal
 * for equal ones it interned (in the tuple it is given), where compile() and exec
 * of a string keep their own: `x is 1.5` across code objects would change. */
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030D0000
#  define FH_CODE_INTERNS_CONSTANTS 1
#else
#  define FH_CODE_INTERNS_CONSTANTS 0
#endif

/* 3.12+ report changes of watched dicts and of functions (PyDict_AddWatcher,
 * PyFunction_AddWatcher). Not used on free-threaded builds, where a callback may
 * run on any thread while another reads what it updates. */
#if PY_VERSION_HEX >= 0x030C0000 && !defined(Py_GIL_DISABLED)
#  define FH_HAS_WATCHERS 1
#else
#  define FH_HAS_WATCHERS 0
#endif

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *obj) { Py_INCREF(obj); return obj; }
static inline PyObject *Py_XNewRef(PyObject *obj) { Py_XINCREF(obj); return obj; }
#endif

#define FH_GENERATOR_KINDS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

/* --------------------------------------------------------- eval function */

/* Installs `function` as `interp`'s frame evaluator. 3.15+ lets the default loop
 * keep making its frame-pushing specializations (CALL_PY_*, FOR_ITER_GEN, ...)
 * under an eval function when asked, deoptimising them while one is set so that
 * every frame still reaches it; each SetEvalFrameFunc drops the request, so it is
 * made again after. `specializing` is the request; earlier versions have none. */
static inline void fh_set_eval_function(PyInterpreterState *interp, _PyFrameEvalFunction function, int specializing)
{
    _PyInterpreterState_SetEvalFrameFunc(interp, function);
#if PY_VERSION_HEX >= 0x030F0000
    if (function != _PyEval_EvalFrameDefault) {
        _PyInterpreterState_SetEvalFrameAllowSpecialization(interp, specializing);
    }
#else
    (void)specializing;
#endif
}

/* Whether `interp`'s loop specializes under its current eval function: 1 or 0 on
 * 3.15+ (always 1 under the default one), -1 before (no such setting). */
static inline int fh_eval_specializing(PyInterpreterState *interp)
{
#if PY_VERSION_HEX >= 0x030F0000
    return _PyInterpreterState_IsSpecializationEnabled(interp);
#else
    (void)interp;
    return -1;
#endif
}

/* ------------------------------------------------------ thread and tracing */

/* Hooks and observers run the way CPython runs a trace function: sys.settrace,
 * sys.setprofile and sys.monitoring do not see their frames, and frames they
 * start are not hooked (the eval function passes frames through while tracing). */
static inline void fh_enter_tracing(PyThreadState *tstate)
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

static inline void fh_leave_tracing(PyThreadState *tstate)
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

/* Whether CPython is finalising `interp`: a sub-interpreter says so before
 * its exit functions run; the main one only once they have run, when the
 * runtime finalises. */
static inline int fh_interp_finalizing(PyInterpreterState *interp)
{
#if PY_VERSION_HEX >= 0x030D0000
    return interp->finalizing || Py_IsFinalizing();
#else
    return interp->finalizing || _Py_IsFinalizing();
#endif
}

#if !FH_EVAL_CHECKS_C_STACK
/* How many Python frames deep the thread is (for the C-stack guard). */
static inline int fh_python_depth(PyThreadState *tstate)
{
#  if PY_VERSION_HEX >= 0x030B0000
    return tstate->recursion_limit - tstate->recursion_remaining;
#  else
    return tstate->recursion_depth;
#  endif
}
#endif

/* ---------------------------------------------------------------- co_extra */

static inline Py_ssize_t fh_compat_request_code_extra_index(freefunc free_extra)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
#else
    return _PyEval_RequestCodeExtraIndex(free_extra);
#endif
}

static inline int fh_compat_code_set_extra(PyObject *code, Py_ssize_t index, void *extra)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Code_SetExtra(code, index, extra);
#else
    return _PyCode_SetExtra(code, index, extra);
#endif
}

/* ------------------------------------------------------------------ code */

/* Whether `code` has exception-handling entries in an exception table: 3.11+;
 * 3.9/3.10 set handlers up with instructions instead. */
static inline int fh_code_has_exception_entries(PyCodeObject *code)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyBytes_GET_SIZE(code->co_exceptiontable) > 0;
#else
    (void)code;
    return 0;
#endif
}

/* Whether CPython never frees `object`: immortal objects are 3.12+. */
static inline int fh_compat_is_immortal(PyObject *object)
{
#if PY_VERSION_HEX >= 0x030C0000
    return _Py_IsImmortal(object);
#else
    (void)object;
    return 0;
#endif
}

/* A type's version tag while valid, else 0. 3.12+ zeroes the tag itself on a change;
 * before, only the flag says whether it is still valid. */
static inline unsigned int fh_compat_type_version(PyTypeObject *type)
{
#if PY_VERSION_HEX >= 0x030C0000
#ifdef Py_GIL_DISABLED
    return __atomic_load_n(&type->tp_version_tag, __ATOMIC_RELAXED);
#else
    return type->tp_version_tag;
#endif
#else
    return PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
#endif
}

static inline void fh_compat_assign_type_version(PyTypeObject *type)
{
#if PY_VERSION_HEX >= 0x030C0000
    (void)PyUnstable_Type_AssignVersionTag(type);
#else
    /* The method cache's lookup assigns the type (and its bases) a tag. */
    static PyObject *name;
    if (name == NULL) {
        name = PyUnicode_InternFromString("__framehook_version__");
        if (name == NULL) {
            PyErr_Clear();
            return;
        }
    }
    (void)_PyType_Lookup(type, name);
#endif
}

/* `name` found along `type`'s MRO by CPython's own lookup (its method cache), a new
 * reference, or NULL (no error set) where no class has it: `_PyType_LookupRef` from 3.13
 * (a strong reference, safe on free-threaded builds), `_PyType_Lookup`'s borrowed one
 * taken before. */
static inline PyObject *fh_compat_type_lookup(PyTypeObject *type, PyObject *name)
{
#if PY_VERSION_HEX >= 0x030D0000
    return _PyType_LookupRef(type, name);
#else
    PyObject *found = _PyType_Lookup(type, name);
    Py_XINCREF(found);
    return found;
#endif
}

static inline int fh_compat_lookup_attr(PyObject *object, PyObject *name, PyObject **result)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(object, name, result);
#else
    return _PyObject_LookupAttr(object, name, result);
#endif
}

/* ----------------------------------------------------------------- frames */

static inline PyCodeObject *fh_frame_code(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    return _PyFrame_GetCode(frame);
#else
    return frame->f_code;
#endif
}

static inline int fh_frame_owned_by_generator(fh_frame *frame)
{
#if FH_INTERP_FRAMES
    return frame->owner == FRAME_OWNED_BY_GENERATOR;
#else
    return frame->f_gen != NULL;
#endif
}

#if FH_INTERP_FRAMES

static inline PyObject *fh_frame_function(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030E0000
    return PyStackRef_AsPyObjectBorrow(frame->f_funcobj);
#elif PY_VERSION_HEX >= 0x030C0000
    return frame->f_funcobj;
#else
    return (PyObject *)frame->f_func;
#endif
}

/* A slot of localsplus: a tagged _PyStackRef on 3.14, a PyObject * before. */
#if PY_VERSION_HEX >= 0x030E0000
typedef _PyStackRef fh_slot;
static inline PyObject *fh_slot_object(fh_slot slot)
{
    return PyStackRef_IsNull(slot) ? NULL : PyStackRef_AsPyObjectBorrow(slot);
}
static inline void fh_slot_release(fh_slot slot) { PyStackRef_XCLOSE(slot); }
#else
typedef PyObject *fh_slot;
static inline PyObject *fh_slot_object(fh_slot slot) { return slot; }
static inline void fh_slot_release(fh_slot slot) { Py_XDECREF(slot); }
#endif

static inline _PyInterpreterFrame *fh_thread_current_frame(PyThreadState *tstate)
{
#if PY_VERSION_HEX >= 0x030D0000
    return tstate->current_frame;
#else
    return tstate->cframe->current_frame;
#endif
}

/* How many data-stack slots a frame of `code` takes. */
static inline int fh_frame_slot_count(PyCodeObject *code)
{
#if PY_VERSION_HEX >= 0x030C0000
    return code->co_framesize;
#else
    return code->co_nlocalsplus + code->co_stacksize + FRAME_SPECIALS_SIZE;
#endif
}

/* Whether the frame has not executed an instruction yet. */
static inline int fh_frame_is_fresh(fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030E0000
    return frame->instr_ptr == _PyFrame_GetBytecode(frame);
#elif PY_VERSION_HEX >= 0x030D0000
    return frame->instr_ptr == _PyCode_CODE(fh_frame_code(frame));
#else
    return _PyInterpreterFrame_LASTI(frame) < 0;
#endif
}

/* Re-initialises a fresh frame for `code`, keeping its function (or taking
 * `new_function`, a new reference), its locals mapping and its link. Slots
 * from `null_locals_from` on become NULL. */
static inline void fh_reinitialise_frame(PyThreadState *tstate, fh_frame *frame, PyCodeObject *code,
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
    (void)tstate;
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
    (void)tstate;
    if (new_function != NULL) {
        Py_SETREF(frame->f_func, (PyFunctionObject *)new_function);
    }
    Py_SETREF(frame->f_code, (PyCodeObject *)Py_NewRef((PyObject *)code));
    frame->prev_instr = _PyCode_CODE(code) - 1;
    frame->stacktop = code->co_nlocalsplus;
    for (int i = null_locals_from; i < code->co_nlocalsplus; i++) {
        frame->localsplus[i] = NULL;
    }
#endif
}

#endif /* FH_INTERP_FRAMES */

/* Frees a fresh frame that will not run (its arguments, function and code) and
 * pops it off the thread's data stack, where its evaluator would have. */
static inline void fh_discard_unrun_frame(PyThreadState *tstate, fh_frame *frame)
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
    /* 3.11: the caller (_PyEval_Vector) clears and pops the frame; 3.9/3.10:
     * the caller owns and frees it. */
    (void)tstate;
    (void)frame;
#endif
}

/* Frames hooks never see: resumed generators and coroutines, frames of code
 * that is not a function's (trampolines), and, on 3.9/3.10, every
 * generator-like frame (its generator exists already and would keep resuming
 * the original frame). */
static inline int fh_frame_is_hookable(fh_frame *frame)
{
#if FH_INTERP_FRAMES
    return frame->owner == FRAME_OWNED_BY_THREAD && fh_frame_is_fresh(frame)
           && PyFunction_Check(fh_frame_function(frame));
#else
    return frame->f_lasti == -1 && frame->f_gen == NULL
           && !(frame->f_code->co_flags & FH_GENERATOR_KINDS);
#endif
}

/* Whether a frame starts from its beginning (else it resumes). */
static inline int fh_frame_starts(fh_frame *frame, int throwflag)
{
#if FH_INTERP_FRAMES
    return !throwflag && fh_frame_is_fresh(frame);
#else
    return !throwflag && frame->f_lasti == -1;
#endif
}

/* Whether a generator-owned frame that has just returned to its caller only suspended.
 * 3.15+ says so in the thread state, as its own gen_send_ex2 reads it: on a
 * free-threaded build another thread may already have resumed the generator. */
static inline int fh_frame_suspended(PyThreadState *tstate, fh_frame *frame)
{
#if PY_VERSION_HEX >= 0x030F0000
    (void)frame;
    return ((_PyThreadStateImpl *)tstate)->generator_return_kind == GENERATOR_YIELD;
#elif FH_INTERP_FRAMES
    (void)tstate;
    /* The frame lives inside its generator, which the resuming caller keeps alive. */
    PyGenObject *gen = (PyGenObject *)((char *)frame - offsetof(PyGenObject, gi_iframe));
#  if PY_VERSION_HEX >= 0x030D0000
    return FRAME_STATE_SUSPENDED(gen->gi_frame_state);
#  else
    return gen->gi_frame_state == FRAME_SUSPENDED;
#  endif
#elif PY_VERSION_HEX >= 0x030A0000
    (void)tstate;
    return frame->f_state == FRAME_SUSPENDED;
#else
    (void)tstate;
    return frame->f_stacktop != NULL;
#endif
}

#endif /* FRAMEHOOK_COMPAT_H */
