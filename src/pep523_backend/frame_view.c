/* What hooks see of a frame about to run (fh_frame_view): its globals,
 * builtins, the values bound so far, and its caller. */
#include "shim_internal.h"

PyObject *fh_view_globals(const fh_frame_view *view)
{
    return ((fh_frame *)view->frame)->f_globals;
}

PyObject *fh_view_builtins(const fh_frame_view *view)
{
    return ((fh_frame *)view->frame)->f_builtins;
}

static int has_locals_mapping(const fh_frame_view *view)
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
    if (has_locals_mapping(view)) {
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
    PyObject *closure = PyFunction_GET_CLOSURE(fh_frame_function(frame));
    int first_free = code->co_nlocalsplus - code->co_nfreevars;
    for (int i = 0; i < code->co_nlocalsplus; i++) {
        _PyLocals_Kind kind = _PyLocals_GetKind(code->co_localspluskinds, i);
#ifdef CO_FAST_HIDDEN
        if (kind & CO_FAST_HIDDEN) {
            continue;
        }
#endif
        PyObject *name = PyTuple_GET_ITEM(code->co_localsplusnames, i);
        PyObject *value = fh_slot_object(frame->localsplus[i]);
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

PyObject *fh_view_argument(const fh_frame_view *view, Py_ssize_t index)
{
    fh_frame *frame = (fh_frame *)view->frame;
    PyCodeObject *code = view->code;
    if (index < 0 || index >= code->co_argcount + code->co_kwonlyargcount
                                  + !!(code->co_flags & CO_VARARGS) + !!(code->co_flags & CO_VARKEYWORDS)) {
        return NULL;
    }
#if FH_INTERP_FRAMES
    /* Fresh frame: arguments are in their slots, raw even when they are cells. */
    return fh_slot_object(frame->localsplus[index]);
#else
    PyObject *value = frame->f_localsplus[index];
    if (value != NULL || code->co_cell2arg == NULL) {
        return value;
    }
    /* An argument that is also a cell was moved into its cell. */
    Py_ssize_t ncells = PyTuple_GET_SIZE(code->co_cellvars);
    for (Py_ssize_t i = 0; i < ncells; i++) {
        if (code->co_cell2arg[i] == index) {
            PyObject *cell = frame->f_localsplus[code->co_nlocals + i];
            return cell != NULL && PyCell_Check(cell) ? PyCell_GET(cell) : NULL;
        }
    }
    return NULL;
#endif
}

PyObject *fh_view_free_cell(const fh_frame_view *view, Py_ssize_t index)
{
    fh_frame *frame = (fh_frame *)view->frame;
    PyCodeObject *code = view->code;
#if FH_INTERP_FRAMES
    if (index < 0 || index >= code->co_nfreevars) {
        return NULL;
    }
    /* COPY_FREE_VARS has not run: the cells are still the function's closure. */
    PyObject *closure = PyFunction_GET_CLOSURE(fh_frame_function(frame));
    PyObject *cell = closure != NULL ? PyTuple_GET_ITEM(closure, index) : NULL;
#else
    if (index < 0 || index >= PyTuple_GET_SIZE(code->co_freevars)) {
        return NULL;
    }
    PyObject *cell = frame->f_localsplus[code->co_nlocals + PyTuple_GET_SIZE(code->co_cellvars) + index];
#endif
    return cell != NULL && PyCell_Check(cell) ? cell : NULL;
}

PyObject *fh_view_free_variable(const fh_frame_view *view, Py_ssize_t index)
{
    PyObject *cell = fh_view_free_cell(view, index);
    return cell != NULL ? PyCell_GET(cell) : NULL;
}

int fh_view_thread_traced(const fh_frame_view *view)
{
    return view->tstate->c_tracefunc != NULL;
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
