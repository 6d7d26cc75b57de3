/* Frames laid out like CPython's, for SOT's Paddle compatibility: Paddle's
 * native guard code reads the frame object it is given as its own frame proxy. */
#include "shim_internal.h"

#include <string.h>


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
