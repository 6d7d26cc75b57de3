/* The contract between framehook's C shim and its Rust code: every struct,
 * flag and function shared by the two, declared once, here.
 *
 * The Rust mirror is `src/pep523_backend/contract.rs`; `contract_layout.c`
 * gives the sizes, offsets and flag values a C compiler makes of this header,
 * and a cargo test compares them with the mirror, so a drift fails the tests
 * instead of corrupting memory.
 *
 * The shim knows nothing of the layers above it: what it calls in them
 * (`fh_upcalls`) it is given as function pointers, in the context installed
 * for each interpreter. */
#ifndef FRAMEHOOK_CONTRACT_H
#define FRAMEHOOK_CONTRACT_H

#include <Python.h>

/* A frame about to run, as handed to the PEP 523 function. Valid only during
 * the upcall that receives it. */
typedef struct fh_frame_view {
    PyThreadState *tstate;
    void *frame;                  /* PyFrameObject* (3.9/3.10) or _PyInterpreterFrame* */
    PyCodeObject *code;           /* the original code, borrowed */
    void *caller;                 /* 3.11+: the thread's current frame when the call arrived */
    struct fh_context *context;   /* the context installed for the frame's interpreter */
} fh_frame_view;

/* What a native hook function gets as its framehook_frame (framehook.h). */
typedef struct fh_native_frame {
    const fh_frame_view *view;
    PyObject *current;  /* the code that would run now, borrowed */
    PyObject *original; /* borrowed */
} fh_native_frame;

/* One native hook of a chain the eval function calls itself. */
typedef struct fh_native_link {
    int (*hook)(void *user_data, const void *frame, PyObject **replacement); /* framehook_hook_func */
    void *user_data;
    const void *owner; /* what keeps the hook alive: released through fh_upcalls.release_native_owner */
} fh_native_link;

/* The enabled hooks of a generation in which every one is an uncached native
 * hook and none observes, in call order, as the Rust side decided them: the
 * eval function calls them with no Rust in between, and hands any answer other
 * than a plain decline (0, no replacement) to fh_upcalls.dispatch_native_rest.
 * Reference counted: the context holds one while it is published, each frame
 * asking the chain one. */
typedef struct fh_native_chain {
    Py_ssize_t refs; /* atomic on free-threaded builds, GIL-protected otherwise */
    unsigned long long generation;
    /* Releases each link's owner when the last reference goes: the context's
     * release_native_owner upcall, kept here so that releasing needs no context. */
    void (*release_owner)(const void *owner);
    Py_ssize_t count;
    fh_native_link links[];
} fh_native_chain;

/* What the hook chain decided for a frame. */
typedef struct fh_decision {
    PyObject *code;       /* strong reference to the replacement, or NULL: run the original */
    const int *arg_map;   /* for each argument slot of the replacement, the original's slot; NULL = identity */
    void *arg_map_owner;  /* non-NULL: pass to fh_upcalls.release once arg_map is no longer used */
    void *observers;      /* non-NULL: report the frame's events to them (fh_upcalls.observe),
                           * then fh_upcalls.release_observers */
    void *after_frame;    /* non-NULL: pass to fh_upcalls.finish once the frame has finished */
} fh_decision;

/* The functions of the layer above (src/hookapi/upcalls.rs) the eval function
 * calls. Each is called attached to the frame's interpreter. */
typedef struct fh_upcalls {
    /* Asks the hooks about a frame. 0 with `out` filled, or -1 with an
     * exception set (the frame then does not run; the exception reaches the caller). */
    int (*dispatch)(fh_frame_view *view, fh_decision *out);
    /* The rest of a native chain's dispatch once link `index` did not give a
     * plain decline: `status` < 0, it failed with an exception set; else
     * `replacement`, a new reference, is its answer. As dispatch. */
    int (*dispatch_native_rest)(fh_frame_view *view, fh_decision *out, const fh_native_chain *chain,
                                Py_ssize_t index, int status, PyObject *replacement);
    /* Releases a decision's arg_map_owner. */
    void (*release)(void *arg_map_owner);
    /* For frames that are not hooked (resumed generators, thrown-in frames)
     * while some hook observes: who observes this frame, or NULL. */
    void *(*passthrough_observers)(struct fh_context *context);
    /* One event (FRAMEHOOK_EVENT_* of framehook.h) of a frame running `code`
     * (`original`: its original code, NULL if not hooked). Leaves the
     * exception state as it was. */
    void (*observe)(void *observers, int event, PyObject *code, PyObject *original);
    void (*release_observers)(void *observers);
    /* Runs what hooks asked to run after the frame. */
    void (*finish)(void *after_frame);
    /* Releases a native chain link's owner, when its chain goes. */
    void (*release_native_owner)(const void *owner);
} fh_upcalls;

/* framehook's per-interpreter state as the shim sees it: the context given to
 * fh_install, which must outlive the interpreter. Enough for the eval function
 * to run a frame as the hooks decided before, without calling Rust. */
typedef struct fh_context {
    /* Bumped by FH_GENERATION_STEP on every change of the hooks; its low bits
     * are the FH_GENERATION_* flags of that generation. */
    _Atomic unsigned long long generation;
    Py_ssize_t code_extra_index;  /* where the code states are (fh_code_state_head) */
    fh_upcalls upcalls;           /* by value: an upcall costs no load of the table */
    /* The native hooks the eval function calls itself, or NULL (fh_publish_native_chain). */
    fh_native_chain *_Atomic native_chain;
    _Atomic Py_ssize_t native_chain_readers; /* free-threaded builds: between load and retain */
} fh_context;

/* Generation flags: some hook observes (frames need reporting); the hooks are
 * the context's native chain. Code states are read only in generations with
 * neither: no decision is remembered for the code then. Scoped: every hook
 * acts only on threads inside an armed scope (fh_arm_thread), so frames of
 * other threads run without asking (never with the other two). */
#define FH_GENERATION_OBSERVING 1ULL
#define FH_GENERATION_NATIVE_CHAIN 2ULL
#define FH_GENERATION_SCOPED 4ULL
#define FH_GENERATION_STEP 8ULL

/* What co_extra holds at the context's index: a pointer to this head of
 * framehook's per-code state. */
typedef struct fh_code_state_head {
    /* The generation in which the whole chain decided, for every frame of
     * this code, to run it unchanged. */
    _Atomic unsigned long long declined_in;
    /* ... or to run a replacement (the Rust side holds which). */
    _Atomic unsigned long long replaced_in;
    /* That replacement when it takes the original's arguments slot for slot,
     * else NULL; borrowed (the Rust state holds it), read atomically. */
    PyObject *replacement;
} fh_code_state_head;

/* ------------------------------------------------------ what the shim exports */

/* Which interpreter the shim was compiled for. */
unsigned long fh_build_version_hex(void);
int fh_build_gil_disabled(void);
int fh_build_debug(void);

/* Installing the PEP 523 function in the calling thread's interpreter.
 * fh_install: 0 ok, 1 already installed, -1 with an exception set; `context`
 * is handed to every upcall. fh_uninstall: 1 removed and the previous function
 * restored, 0 left in place because another function was installed over ours
 * (ours keeps passing frames through). Callers serialise. */
int fh_install(fh_context *context);
int fh_uninstall(void);
/* The calling thread's interpreter is going away: framehook's function leaves
 * its chain (restoring what it replaced if it is the current one) and its
 * entry is given back, whatever else is installed. Returns whether CPython
 * is finalising the interpreter (a sub-interpreter ending; for the main one,
 * its exit functions run before it says so). Attached; callers serialise. */
int fh_forget_interpreter(void);
/* The module slots saying which interpreters framehook's module loads in
 * (after its exec slot; {0, NULL} ends the slots early where there is less to say). */
extern const PyModuleDef_Slot fh_interpreter_module_slots[2];
/* Whether CPython is finalising the calling thread's interpreter (see above). */
int fh_interpreter_finalizing(void);
/* The calling thread's interpreter's id: unlike its address, never reused. */
long long fh_interpreter_id(void);

/* Makes `chain` (NULL: none) the context's, dropping the context's reference
 * to the previous one; the caller's reference passes to the context. Writers
 * serialise; attached. */
void fh_publish_native_chain(fh_context *context, fh_native_chain *chain);
/* A native chain of `count` links (to be filled in) for `generation`, to be
 * published to `context`, holding one reference; NULL when out of memory (no
 * exception set). */
fh_native_chain *fh_native_chain_new(const fh_context *context, Py_ssize_t count, unsigned long long generation);

/* Before `object` is stored where the eval function reads it without a lock
 * (fh_code_state_head.replacement): free-threaded builds must be told. */
void fh_prepare_lock_free_read(PyObject *object);

/* framehook.disabled() blocks: threads inside one (the eval function asks
 * hooks nothing for them). */
void fh_disabled_threads_add(int delta);
int fh_disabled_threads(void);

/* Armed scopes on the calling thread (nesting: +1 entering, -1 leaving): in a
 * FH_GENERATION_SCOPED generation, frames of a thread in none run unasked. */
void fh_arm_thread(int delta);

/* Around running hooks and observers: tracing, profiling and monitoring are
 * suspended, as for a trace function. Calls nest; each enter is left, with the
 * calling thread's state. */
void fh_enter_hook_context(PyThreadState *tstate);
void fh_leave_hook_context(PyThreadState *tstate);

/* 1 if `code` is a code object with an exception table (3.11+; 0 before). */
int fh_code_has_exception_table(PyObject *code);

/* 1 if CPython never frees `object` (3.12+; free-threaded 3.13 makes every code
 * object immortal once a thread has run, gh-117696). */
int fh_is_immortal(PyObject *object);

/* `type`'s version tag while valid, else 0: CPython changes it when an attribute of the
 * type or of one of its bases is set or deleted (the tag its method cache and specialized
 * instructions rely on). With `assign`, a type without a valid tag is given one first
 * (0 where CPython has run out of tags for it). */
unsigned int fh_type_version(PyObject *type, int assign);

/* 1 if attributes can be set on `type` (a class defined in Python: a heap type that is
 * not immutable), else 0 (builtin types). */
int fh_type_is_mutable(PyObject *type);

/* `name` (a str) found along the MRO of `type`, a ready type, as
 * type.__getattribute__ finds it (CPython's method cache): a new reference, or NULL (no
 * error set) where no class has it. */
PyObject *fh_type_lookup(PyObject *type, PyObject *name);
/* getattr(object, name): 1 and a new reference in *result, 0 where it has no such
 * attribute (no AttributeError made where the lookup is generic), -1 with an error set. */
int fh_lookup_attr(PyObject *object, PyObject *name, PyObject **result);

/* 1 where a new code object's constants may be swapped for interned equal ones
 * (free-threaded 3.13+); fh_code_keep_constants then puts back the objects of
 * `given`, a copy of the tuple `code` was made with, taken before (its items,
 * strings apart, where they differ). 0, or -1 with an exception set. The code
 * must not have run yet. */
int fh_code_interns_constants(void);
int fh_code_keep_constants(PyObject *code, PyObject *given);

/* Watchers of dicts and functions (3.12+, builds with the GIL; elsewhere the
 * registering functions return -1 with no exception set, and nothing is watched).
 * One callback of each kind per interpreter, which runs with the GIL held:
 * fh_watch_dicts_with registers `changed` for dicts and returns the watcher's id;
 * it is called with a watched dict and the key added, replaced or deleted, or with
 * NULL for a change of the whole dict (cleared, cloned into, or `gone`: being
 * deallocated). fh_watch_dict watches `dict`: 0, or -1 with an exception set.
 * fh_watch_functions_with registers `changed` for functions: called (key NULL)
 * with any function whose code, defaults or keyword defaults are being replaced
 * (CPython has no per-function watch; creation and deallocation are not passed
 * on: whoever watches a function holds it). */
typedef void (*fh_watched_changed)(PyObject *object, PyObject *key, int gone);
int fh_watch_dicts_with(fh_watched_changed changed);
int fh_watch_dict(int watcher, PyObject *dict);
int fh_watch_functions_with(fh_watched_changed changed);

/* Per-code storage (co_extra), safe on free-threaded builds. The index is per
 * interpreter. fh_code_get_extra returns NULL when nothing is stored.
 * fh_code_extra_or_store stores `extra` unless a value is stored already, and
 * returns the value stored now (`extra` or the earlier one), or NULL with an
 * exception set. */
Py_ssize_t fh_request_code_extra_index(freefunc free_extra);
void *fh_code_get_extra(PyObject *code, Py_ssize_t index);
void *fh_code_extra_or_store(PyObject *code, Py_ssize_t index, void *extra);

/* Frame accessors; all take a view that is still valid. */
PyObject *fh_view_globals(const fh_frame_view *view);   /* borrowed */
PyObject *fh_view_builtins(const fh_frame_view *view);  /* borrowed */
PyObject *fh_view_locals(const fh_frame_view *view);    /* new dict, or NULL with error */
PyObject *fh_view_back(const fh_frame_view *view);      /* new reference, Py_None if none */
/* 1 if the frame's thread has a trace function (sys.settrace), 0 if not. */
int fh_view_thread_traced(const fh_frame_view *view);
/* Argument `index` (of co_varnames) as bound at entry, unboxed; free variable
 * `index` (of co_freevars), its cell's contents. Borrowed, or NULL (no error)
 * when unbound or out of range. */
PyObject *fh_view_argument(const fh_frame_view *view, Py_ssize_t index);
PyObject *fh_view_free_variable(const fh_frame_view *view, Py_ssize_t index);
PyObject *fh_view_free_cell(const fh_frame_view *view, Py_ssize_t index); /* the cell itself */
/* A new object with f_code (`code`), f_globals, f_builtins and f_locals (a
 * dict, cells unboxed), laid out in memory as CPython's frames for native code
 * that reads frame fields directly (Paddle's guard tree, for SOT); it never
 * refers to the live frame. */
PyObject *fh_view_layout_frame(const fh_frame_view *view, PyObject *code);

#ifdef FH_TESTING
/* Built with the `testing` cargo feature only (testing.c). */

/* 1 if the interpreter's current eval function is framehook's. */
int fh_is_installed(void);
/* The interpreter's current eval function and framehook's. */
void *fh_current_eval_function(void);
void *fh_framehook_eval_function(void);

/* Whether the loop specializes under the current eval function (3.15+: 1 or 0;
 * -1 before, where there is no such setting), and setting it (-1: no setting). */
int fh_test_eval_specializing(void);
int fh_test_set_eval_specializing(int specializing);

/* A foreign pass-through eval function, as another PEP 523 tool would install
 * it, counting the frames it sees; it asks the loop to keep specializing (3.15+)
 * if `specializing`. */
int fh_test_install_passthrough(int specializing);
int fh_test_uninstall_passthrough(void);
unsigned long long fh_test_passthrough_calls(void);
void *fh_test_passthrough_function(void);

/* A bare pass-through eval function (no counting, nothing else), the floor
 * framehook's overhead is compared with. Install: 0 ok, 1 already installed,
 * -1 with an exception if another function than CPython's default is
 * installed. Uninstall: 1 removed, 0 it was not installed. */
int fh_bench_install_floor(void);
int fh_bench_uninstall_floor(void);
#endif

#endif /* FRAMEHOOK_CONTRACT_H */
