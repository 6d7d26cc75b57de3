/* Test and bench eval functions, built with the `testing` cargo feature only:
 * a foreign pass-through eval function standing for another PEP 523 tool, and
 * the bare floor framehook's overhead is measured against. */
#include "shim_internal.h"

int fh_is_installed(void)
{
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get()) == (_PyFrameEvalFunction)fh_eval;
}

void *fh_current_eval_function(void)
{
    return (void *)_PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
}

void *fh_framehook_eval_function(void) { return (void *)fh_eval; }

int fh_test_eval_specializing(void) { return fh_eval_specializing(PyInterpreterState_Get()); }

int fh_test_set_eval_specializing(int specializing)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (fh_eval_specializing(interp) < 0) {
        return -1;
    }
    fh_set_eval_function(interp, _PyInterpreterState_GetEvalFrameFunc(interp), specializing);
    return 0;
}

/* ------------------------------------------------ foreign eval function */

static _Atomic unsigned long long fh_test_calls;
static _Atomic(_PyFrameEvalFunction) fh_test_previous; /* CPython's default included */

static PyObject *fh_test_passthrough(PyThreadState *tstate, fh_frame *frame, int throwflag)
{
    atomic_fetch_add_explicit(&fh_test_calls, 1, memory_order_relaxed);
    return atomic_load(&fh_test_previous)(tstate, frame, throwflag);
}

int fh_test_install_passthrough(int specializing)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (current == (_PyFrameEvalFunction)fh_test_passthrough) {
        return 1;
    }
    atomic_store(&fh_test_previous, current);
    fh_set_eval_function(interp, (_PyFrameEvalFunction)fh_test_passthrough, specializing);
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
    /* As a tool unaware of the setting would: the loop stops specializing under `previous`. */
    fh_set_eval_function(interp, previous, 0);
    return 1;
}

int fh_test_uninstall_passthrough(void)
{
    return restore_if_current((_PyFrameEvalFunction)fh_test_passthrough, atomic_load(&fh_test_previous));
}

unsigned long long fh_test_passthrough_calls(void) { return atomic_load(&fh_test_calls); }

void *fh_test_passthrough_function(void) { return (void *)fh_test_passthrough; }

/* ------------------------------------------------ floor eval function */

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
    fh_set_eval_function(interp, (_PyFrameEvalFunction)fh_bench_floor, 1);
    return 0;
}

int fh_bench_uninstall_floor(void)
{
    return restore_if_current((_PyFrameEvalFunction)fh_bench_floor, _PyEval_EvalFrameDefault);
}
