/* Running a replacement for a frame about to start.
 *
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
#include "shim_internal.h"

#include <string.h>

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

PyObject *fh_run_replacement(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                             const fh_decision *decision)
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

#else /* FH_INTERP_FRAMES */

FH_THREAD_LOCAL PyCodeObject *fh_called_replacement;
_Atomic int fh_replacement_calls;

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

#if FH_TOP_LEVEL_FUNCTIONS_DEFERRED
/* A copy of a top-level function made per call would be freed only by the GC,
 * or never (compat.h). A function made from code flagged CO_NESTED is counted
 * normally: copies are made from this empty code object, then given theirs. */
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

/* 0: the frame now runs `code` (holding its own reference); 1: it does not fit
 * in place; -1: error (nothing changed). */
static int replace_in_place(PyThreadState *tstate, fh_frame *frame, PyCodeObject *code, const int *arg_map)
{
    PyCodeObject *original = fh_frame_code(frame);
    PyObject **base = (PyObject **)frame;
    int new_size = fh_frame_slot_count(code);
    if (base + fh_frame_slot_count(original) != tstate->datastack_top
        || new_size >= tstate->datastack_limit - base) {
        return 1;
    }
    PyObject *new_function = NULL;
    if (code->co_flags & FH_GENERATOR_KINDS) {
        new_function = function_with_code(fh_frame_function(frame), code);
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
        fh_slot_release(frame->localsplus[i]); /* NULL in a fresh frame */
    }
    tstate->datastack_top = base + new_size;
    fh_reinitialise_frame(tstate, frame, code, new_function, arguments == NULL ? nargs : 0);
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
        varargs = fh_slot_object(frame->localsplus[mapped_argument(arg_map, slot++)]);
    }
    if (code->co_flags & CO_VARKEYWORDS) {
        varkw = fh_slot_object(frame->localsplus[mapped_argument(arg_map, slot)]);
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
        args[n++] = fh_slot_object(frame->localsplus[mapped_argument(arg_map, i)]);
    }
    for (Py_ssize_t i = 0; i < nextra; i++) {
        args[n++] = PyTuple_GET_ITEM(varargs, i);
    }
    for (int i = code->co_argcount; i < code->co_argcount + code->co_kwonlyargcount; i++) {
        args[n++] = fh_slot_object(frame->localsplus[mapped_argument(arg_map, i)]);
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
    PyObject *function = fh_frame_function(frame);
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
    fh_discard_unrun_frame(tstate, frame);
    return result;
}

PyObject *fh_run_replacement(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                             const fh_decision *decision)
{
    switch (replace_in_place(tstate, frame, (PyCodeObject *)decision->code, decision->arg_map)) {
    case 0:
        return next(tstate, frame, 0);
    case 1:
        return run_by_call(tstate, frame, decision);
    default:
        fh_discard_unrun_frame(tstate, frame);
        return NULL;
    }
}
#endif /* FH_INTERP_FRAMES */

PyObject *fh_run_remembered(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next,
                            PyObject *replacement)
{
#if FH_INTERP_FRAMES
    /* The usual case: it runs in place, the next evaluator tail-called. */
    int in_place = replace_in_place(tstate, frame, (PyCodeObject *)replacement, NULL);
    if (in_place <= 0) {
        Py_DECREF(replacement); /* the frame holds it, if it runs */
        if (in_place < 0) {
            fh_discard_unrun_frame(tstate, frame);
            return NULL;
        }
        return next(tstate, frame, 0);
    }
#endif
    const fh_decision decision = {replacement, NULL, NULL, NULL, NULL};
    PyObject *result = fh_run_replacement(tstate, frame, next, &decision);
    Py_DECREF(replacement);
    return result;
}
