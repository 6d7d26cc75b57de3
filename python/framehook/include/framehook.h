/* framehook C API: native frame hooks and observers.
 *
 * framehook publishes this API as a capsule on `framehook._native`. A native
 * hook takes part in the same ordered chain as Python hooks and follows the
 * same rules (docs/api.md in framehook's repository): it sees each frame
 * about to run and may return a replacement code object, costing no Python
 * call per frame. A hook may also observe evaluation: call/return/exception
 * events, and yield/resume events of generators and coroutines, each carrying
 * the code object that actually runs (the original or the replacement).
 *
 *     #include "framehook.h"      // -I$(python -c "import framehook; print(framehook.get_include())")
 *
 *     const framehook_api *api = framehook_import();   // NULL with an exception set
 *     framehook_hook_spec spec = {sizeof(spec)};
 *     spec.name = "my-hook";
 *     spec.hook = my_hook;                              // and/or spec.observe = my_observer
 *     PyObject *handle = api->add_hook(&spec);           // a framehook.HookHandle
 *     ...
 *     api->remove_hook(handle);
 *     Py_DECREF(handle);
 *
 * Every function here must be called with an attached thread state (holding
 * the GIL on GIL builds). Hooks are per interpreter: add_hook registers in the
 * calling thread's interpreter. Hook and observe functions may be called from
 * any thread of that interpreter, concurrently on free-threaded builds.
 *
 * Compatibility: later versions only append members to these structs and
 * raise FRAMEHOOK_API_VERSION; `size` fields say which members a caller knows.
 */
#ifndef FRAMEHOOK_H
#define FRAMEHOOK_H

#include <Python.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FRAMEHOOK_CAPSULE_NAME "framehook._native._C_API"
#define FRAMEHOOK_API_VERSION 1

/* Evaluation events given to observers. */
#define FRAMEHOOK_EVENT_CALL 0      /* a frame starts running */
#define FRAMEHOOK_EVENT_RETURN 1    /* it returned (a generator function's first frame returns its generator) */
#define FRAMEHOOK_EVENT_EXCEPTION 2 /* it ended with an exception */
#define FRAMEHOOK_EVENT_YIELD 3     /* a generator or coroutine frame suspended */
#define FRAMEHOOK_EVENT_RESUME 4    /* a suspended generator or coroutine frame resumed */

/* What happens when a hook function fails. */
/* A hook fails when it raises or returns something other than a compatible code object. */
#define FRAMEHOOK_ON_ERROR_RAISE 0  /* the exception reaches the caller of the hooked function */
#define FRAMEHOOK_ON_ERROR_LOG 1    /* an Exception is logged to logger "framehook" and the hook
                                     * counts as declining; other BaseExceptions still raise */

/* The frame a hook function receives. Valid only until the hook function returns. */
typedef struct framehook_frame framehook_frame;

/* Decide what a frame runs. Return 0 and leave *replacement NULL to decline;
 * return 0 and set *replacement to a new reference to a code object to
 * replace the current code (framehook checks it is call-compatible, else it is
 * a TypeError naming the hook); return -1 with an exception set on error.
 * Both failures follow `on_error`. */
typedef int (*framehook_hook_func)(void *user_data, const framehook_frame *frame,
                                   PyObject **replacement);

/* Observe one event of a frame running `code`. A frame reports its events to
 * the observers registered when it started: an observer removed meanwhile
 * still gets the exits of frames that started before (its user data stays
 * alive until then), and one added meanwhile does not get them.
 * `original_code` is the frame's original code for the events of a frame
 * handed to the hooks (call, return,
 * exception: the same object as `code` unless a hook replaced it), and NULL
 * for frames that pass through unhooked (a generator resuming and yielding
 * runs the code its call event reported). Both borrowed. An observer must not
 * change what the program does: an exception it leaves set is reported through
 * sys.unraisablehook and cleared. Frames an observer starts are not hooked. */
typedef void (*framehook_observe_func)(void *user_data, int event, PyObject *code,
                                       PyObject *original_code);

typedef struct framehook_hook_spec {
    size_t size;                        /* sizeof(framehook_hook_spec) */
    const char *name;                   /* UTF-8, copied; NULL: "<native hook>" */
    framehook_hook_func hook;           /* NULL: observe only */
    framehook_observe_func observe;     /* NULL: no events */
    void *user_data;                    /* passed to hook and observe */
    /* Called once, attached, when nothing can use the hook any more: after
     * remove_hook, once no running frame and no framehook.HookHandle (such as
     * the one add_hook returned) refers to it. On a failed add_hook,
     * user_data stays the caller's. */
    void (*free_user_data)(void *user_data);
    int cache;                          /* nonzero: the answer depends only on the code object */
    int on_error;                       /* FRAMEHOOK_ON_ERROR_* */
} framehook_hook_spec;

typedef struct framehook_api {
    unsigned int version;               /* FRAMEHOOK_API_VERSION of the running framehook */
    size_t size;                        /* sizeof(framehook_api) of the running framehook */

    /* Registers a hook after the existing ones. Returns a new reference to its
     * framehook.HookHandle (also listed by framehook.frame_hooks()), or NULL
     * with an exception set. */
    PyObject *(*add_hook)(const framehook_hook_spec *spec);
    /* 0, or -1 with ValueError if the handle is not registered (TypeError if not a handle). */
    int (*remove_hook)(PyObject *handle);
    /* Disables or re-enables a hook in place. 0, or -1 with an exception set. */
    int (*set_enabled)(PyObject *handle, int enabled);

    /* Reading the frame a hook function received. Borrowed references. */
    PyObject *(*frame_code)(const framehook_frame *frame);          /* the code that would run now */
    PyObject *(*frame_original_code)(const framehook_frame *frame);
    PyObject *(*frame_globals)(const framehook_frame *frame);
    PyObject *(*frame_builtins)(const framehook_frame *frame);
    /* New references, or NULL with an exception set. */
    PyObject *(*frame_locals)(const framehook_frame *frame);        /* dict of bound values, cells unboxed */
    PyObject *(*frame_back)(const framehook_frame *frame);          /* caller's frame object or None */
} framehook_api;

/* Imports framehook and returns its API, or NULL with an exception set. */
static inline const framehook_api *framehook_import(void)
{
    const framehook_api *api = (const framehook_api *)PyCapsule_Import(FRAMEHOOK_CAPSULE_NAME, 0);
    if (api != NULL && api->version < FRAMEHOOK_API_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "framehook C API version %u is older than the %d this extension was built for",
                     api->version, FRAMEHOOK_API_VERSION);
        return NULL;
    }
    return api;
}

#ifdef __cplusplus
}
#endif

#endif /* FRAMEHOOK_H */
