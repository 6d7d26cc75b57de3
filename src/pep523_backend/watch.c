/* Dict and function watchers (see contract.h): CPython 3.12's PyDict_AddWatcher
 * and PyFunction_AddWatcher, with their events folded into one callback shape. */
#include "shim_internal.h"

#if FH_HAS_WATCHERS

/* The callbacks given, per process: each interpreter registers the same ones. */
static fh_watched_changed fh_dict_changed;
static fh_watched_changed fh_function_changed;

static int on_dict_event(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *new_value)
{
    (void)new_value;
    switch (event) {
    case PyDict_EVENT_ADDED:
    case PyDict_EVENT_MODIFIED:
    case PyDict_EVENT_DELETED:
        fh_dict_changed(dict, key, 0);
        break;
    case PyDict_EVENT_DEALLOCATED:
        fh_dict_changed(dict, NULL, 1);
        break;
    default: /* cleared, cloned into */
        fh_dict_changed(dict, NULL, 0);
        break;
    }
    return 0;
}

static int on_function_event(PyFunction_WatchEvent event, PyFunctionObject *function, PyObject *new_value)
{
    (void)new_value;
    switch (event) {
    case PyFunction_EVENT_MODIFY_CODE:
    case PyFunction_EVENT_MODIFY_DEFAULTS:
    case PyFunction_EVENT_MODIFY_KWDEFAULTS:
        fh_function_changed((PyObject *)function, NULL, 0);
        break;
    default: /* created, deallocated */
        break;
    }
    return 0;
}

int fh_watch_dicts_with(fh_watched_changed changed)
{
    fh_dict_changed = changed;
    int id = PyDict_AddWatcher(on_dict_event);
    if (id < 0) {
        PyErr_Clear(); /* every watcher slot taken: nothing is watched */
    }
    return id;
}

int fh_watch_dict(int watcher, PyObject *dict) { return PyDict_Watch(watcher, dict); }

int fh_watch_functions_with(fh_watched_changed changed)
{
    fh_function_changed = changed;
    int id = PyFunction_AddWatcher(on_function_event);
    if (id < 0) {
        PyErr_Clear();
    }
    return id;
}

#else

int fh_watch_dicts_with(fh_watched_changed changed)
{
    (void)changed;
    return -1;
}

int fh_watch_dict(int watcher, PyObject *dict)
{
    (void)watcher;
    (void)dict;
    PyErr_SetString(PyExc_RuntimeError, "framehook: no dict watchers on this interpreter");
    return -1;
}

int fh_watch_functions_with(fh_watched_changed changed)
{
    (void)changed;
    return -1;
}

#endif
