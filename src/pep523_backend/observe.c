/* Observed frames: their start and end reported to the hooks that observe. */
#include "shim_internal.h"

/* Runs the frame (`decision`'s replacement, when it has one; no decision: the
 * frame is not hooked) and reports its start and end to `observers`, which it
 * releases. Inlined into the two entries below, whose calls need fewer
 * arguments than this. */
static inline __attribute__((always_inline)) PyObject *
run_observed(PyThreadState *tstate, fh_frame *frame, int throwflag, _PyFrameEvalFunction next,
             const fh_upcalls *upcalls, const fh_decision *decision, void *observers)
{
    int replaced = decision != NULL && decision->code != NULL;
    /* The frame, and with it the last reference to its code, may be gone when
     * the exit is reported. */
    PyObject *original = decision != NULL ? Py_NewRef((PyObject *)fh_frame_code(frame)) : NULL;
    PyObject *running = Py_NewRef(replaced ? decision->code : (PyObject *)fh_frame_code(frame));
    int generator_owned = fh_frame_owned_by_generator(frame);
    upcalls->observe(observers, fh_frame_starts(frame, throwflag) ? FRAMEHOOK_EVENT_CALL : FRAMEHOOK_EVENT_RESUME,
                     running, original);
    PyObject *result = replaced ? fh_run_replacement(tstate, frame, next, decision) : next(tstate, frame, throwflag);
    int event = result == NULL                                 ? FRAMEHOOK_EVENT_EXCEPTION
                : generator_owned && fh_frame_suspended(tstate, frame) ? FRAMEHOOK_EVENT_YIELD
                                                               : FRAMEHOOK_EVENT_RETURN;
    upcalls->observe(observers, event, running, original);
    Py_DECREF(running);
    Py_XDECREF(original);
    upcalls->release_observers(observers);
    return result;
}

PyObject *fh_run_observed(PyThreadState *tstate, fh_frame *frame, _PyFrameEvalFunction next, fh_context *context,
                          const fh_decision *decision)
{
    return run_observed(tstate, frame, 0, next, &context->upcalls, decision, decision->observers);
}

PyObject *fh_run_observed_unhooked(PyThreadState *tstate, fh_frame *frame, int throwflag,
                                   _PyFrameEvalFunction next, fh_context *context, void *observers)
{
    return run_observed(tstate, frame, throwflag, next, &context->upcalls, NULL, observers);
}
