//! The Rust mirror of `contract.h`, the one header of everything the shim and
//! the Rust side share. The layout test below compares it with what a C
//! compiler makes of the header (`contract_layout.c`).

use std::ffi::{c_int, c_ulong, c_ulonglong, c_void};
use std::sync::atomic::{AtomicIsize, AtomicPtr, AtomicU64};

use pyo3::ffi::{freefunc, PyObject, Py_ssize_t};

/// `fh_frame_view`.
#[repr(C)]
pub struct FrameViewRaw {
    pub tstate: *mut c_void,
    pub frame: *mut c_void,
    pub code: *mut PyObject,
    pub caller: *mut c_void,
    pub context: *const Context,
}

/// `fh_native_frame`: what a native hook function gets as its `framehook_frame`.
#[repr(C)]
pub struct NativeFrameRaw {
    pub view: *const FrameViewRaw,
    pub current: *mut PyObject,
    pub original: *mut PyObject,
}

/// `fh_native_link`.
#[repr(C)]
pub struct NativeLink {
    pub hook: *const c_void,
    pub user_data: *mut c_void,
    pub owner: *const c_void,
}

/// `fh_native_chain`; `count` links follow it.
#[repr(C)]
pub struct NativeChain {
    pub refs: Py_ssize_t,
    pub generation: c_ulonglong,
    pub release_owner: unsafe extern "C" fn(*const c_void),
    pub count: Py_ssize_t,
    pub links: [NativeLink; 0],
}

/// `fh_decision`.
#[repr(C)]
pub struct Decision {
    pub code: *mut PyObject,
    pub arg_map: *const c_int,
    pub arg_map_owner: *mut c_void,
    pub observers: *mut c_void,
    pub after_frame: *mut c_void,
}

/// `fh_upcalls`: the functions of the layer above the eval function calls.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Upcalls {
    pub dispatch: unsafe extern "C" fn(*mut FrameViewRaw, *mut Decision) -> c_int,
    pub dispatch_native_rest: unsafe extern "C" fn(
        *mut FrameViewRaw,
        *mut Decision,
        *const NativeChain,
        Py_ssize_t,
        c_int,
        *mut PyObject,
    ) -> c_int,
    pub release: unsafe extern "C" fn(*mut c_void),
    pub passthrough_observers: unsafe extern "C" fn(*const Context) -> *mut c_void,
    pub observe: unsafe extern "C" fn(*mut c_void, c_int, *mut PyObject, *mut PyObject),
    pub release_observers: unsafe extern "C" fn(*mut c_void),
    pub finish: unsafe extern "C" fn(*mut c_void),
    pub release_native_owner: unsafe extern "C" fn(*const c_void),
}

/// `fh_context`: framehook's per-interpreter state as the shim sees it.
#[repr(C)]
pub struct Context {
    pub generation: AtomicU64,
    pub code_extra_index: Py_ssize_t,
    pub upcalls: Upcalls,
    pub native_chain: AtomicPtr<NativeChain>,
    pub native_chain_readers: AtomicIsize,
}

pub const GENERATION_OBSERVING: u64 = 1;
pub const GENERATION_NATIVE_CHAIN: u64 = 2;
pub const GENERATION_SCOPED: u64 = 4;
pub const GENERATION_STEP: u64 = 8;

/// `fh_code_state_head`: what co_extra points to at the context's index.
#[repr(C)]
#[derive(Default)]
pub struct CodeStateHead {
    pub declined_in: AtomicU64,
    pub replaced_in: AtomicU64,
    pub replacement: AtomicPtr<PyObject>,
}

/// `fh_watched_changed`: a watched object, the key of a dict's entry that changes (NULL:
/// the whole object), and whether the object is being deallocated.
pub type WatchedChanged = unsafe extern "C" fn(object: *mut PyObject, key: *mut PyObject, gone: c_int);

extern "C" {
    pub fn fh_build_version_hex() -> c_ulong;
    pub fn fh_build_gil_disabled() -> c_int;
    pub fn fh_build_debug() -> c_int;
    pub fn fh_install(context: *const Context) -> c_int;
    pub fn fh_uninstall() -> c_int;
    pub fn fh_forget_interpreter() -> c_int;
    pub static fh_interpreter_module_slots: [pyo3::ffi::PyModuleDef_Slot; 2];
    pub fn fh_interpreter_finalizing() -> c_int;
    pub fn fh_interpreter_id() -> std::ffi::c_longlong;
    pub fn fh_publish_native_chain(context: *const Context, chain: *mut NativeChain);
    pub fn fh_native_chain_new(
        context: *const Context,
        count: Py_ssize_t,
        generation: c_ulonglong,
    ) -> *mut NativeChain;
    pub fn fh_prepare_lock_free_read(object: *mut PyObject);
    pub fn fh_disabled_threads_add(delta: c_int);
    pub fn fh_disabled_threads() -> c_int;
    pub fn fh_arm_thread(delta: c_int);
    pub fn fh_enter_hook_context(tstate: *mut c_void);
    pub fn fh_leave_hook_context(tstate: *mut c_void);
    pub fn fh_code_has_exception_table(code: *mut PyObject) -> c_int;
    pub fn fh_is_immortal(object: *mut PyObject) -> c_int;
    pub fn fh_type_version(type_object: *mut PyObject, assign: c_int) -> std::ffi::c_uint;
    pub fn fh_type_is_mutable(type_object: *mut PyObject) -> c_int;
    pub fn fh_type_lookup(type_object: *mut PyObject, name: *mut PyObject) -> *mut PyObject;
    pub fn fh_lookup_attr(object: *mut PyObject, name: *mut PyObject, result: *mut *mut PyObject) -> c_int;
    pub fn fh_code_interns_constants() -> c_int;
    pub fn fh_code_keep_constants(code: *mut PyObject, given: *mut PyObject) -> c_int;
    pub fn fh_watch_dicts_with(changed: WatchedChanged) -> c_int;
    pub fn fh_watch_dict(watcher: c_int, dict: *mut PyObject) -> c_int;
    pub fn fh_watch_functions_with(changed: WatchedChanged) -> c_int;
    pub fn fh_request_code_extra_index(free: freefunc) -> Py_ssize_t;
    pub fn fh_code_get_extra(code: *mut PyObject, index: Py_ssize_t) -> *mut c_void;
    pub fn fh_code_extra_or_store(code: *mut PyObject, index: Py_ssize_t, extra: *mut c_void) -> *mut c_void;
    pub fn fh_view_globals(view: *const FrameViewRaw) -> *mut PyObject;
    pub fn fh_view_builtins(view: *const FrameViewRaw) -> *mut PyObject;
    pub fn fh_view_locals(view: *const FrameViewRaw) -> *mut PyObject;
    pub fn fh_view_back(view: *const FrameViewRaw) -> *mut PyObject;
    pub fn fh_view_thread_traced(view: *const FrameViewRaw) -> c_int;
    pub fn fh_view_argument(view: *const FrameViewRaw, index: Py_ssize_t) -> *mut PyObject;
    pub fn fh_view_free_variable(view: *const FrameViewRaw, index: Py_ssize_t) -> *mut PyObject;
    pub fn fh_view_free_cell(view: *const FrameViewRaw, index: Py_ssize_t) -> *mut PyObject;
    pub fn fh_view_layout_frame(view: *const FrameViewRaw, code: *mut PyObject) -> *mut PyObject;
}

#[cfg(feature = "testing")]
extern "C" {
    pub fn fh_is_installed() -> c_int;
    pub fn fh_current_eval_function() -> *mut c_void;
    pub fn fh_framehook_eval_function() -> *mut c_void;
    pub fn fh_test_eval_specializing() -> c_int;
    pub fn fh_test_set_eval_specializing(specializing: c_int) -> c_int;
    pub fn fh_test_install_passthrough(specializing: c_int) -> c_int;
    pub fn fh_test_uninstall_passthrough() -> c_int;
    pub fn fh_test_passthrough_calls() -> c_ulonglong;
    pub fn fh_test_passthrough_function() -> *mut c_void;
    pub fn fh_bench_install_floor() -> c_int;
    pub fn fh_bench_uninstall_floor() -> c_int;
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_char, CStr};
    use std::mem::{offset_of, size_of};

    use super::*;

    #[repr(C)]
    struct LayoutEntry {
        name: *const c_char,
        value: usize,
    }

    extern "C" {
        static framehook_contract_layout: [LayoutEntry; 0];
        static framehook_contract_layout_len: usize;
    }

    /// The Rust side of `contract_layout.c`, entry for entry.
    fn rust_layout() -> Vec<(&'static str, usize)> {
        macro_rules! size {
            ($c:literal, $rust:ty) => {
                ($c, size_of::<$rust>())
            };
        }
        macro_rules! member {
            ($c:literal, $rust:ty, $field:ident) => {
                (
                    concat!($c, ".", stringify!($field)),
                    offset_of!($rust, $field),
                )
            };
        }
        vec![
            size!("fh_frame_view", FrameViewRaw),
            member!("fh_frame_view", FrameViewRaw, tstate),
            member!("fh_frame_view", FrameViewRaw, frame),
            member!("fh_frame_view", FrameViewRaw, code),
            member!("fh_frame_view", FrameViewRaw, caller),
            member!("fh_frame_view", FrameViewRaw, context),
            size!("fh_native_frame", NativeFrameRaw),
            member!("fh_native_frame", NativeFrameRaw, view),
            member!("fh_native_frame", NativeFrameRaw, current),
            member!("fh_native_frame", NativeFrameRaw, original),
            size!("fh_native_link", NativeLink),
            member!("fh_native_link", NativeLink, hook),
            member!("fh_native_link", NativeLink, user_data),
            member!("fh_native_link", NativeLink, owner),
            size!("fh_native_chain", NativeChain),
            member!("fh_native_chain", NativeChain, refs),
            member!("fh_native_chain", NativeChain, generation),
            member!("fh_native_chain", NativeChain, release_owner),
            member!("fh_native_chain", NativeChain, count),
            member!("fh_native_chain", NativeChain, links),
            size!("fh_decision", Decision),
            member!("fh_decision", Decision, code),
            member!("fh_decision", Decision, arg_map),
            member!("fh_decision", Decision, arg_map_owner),
            member!("fh_decision", Decision, observers),
            member!("fh_decision", Decision, after_frame),
            size!("fh_upcalls", Upcalls),
            member!("fh_upcalls", Upcalls, dispatch),
            member!("fh_upcalls", Upcalls, dispatch_native_rest),
            member!("fh_upcalls", Upcalls, release),
            member!("fh_upcalls", Upcalls, passthrough_observers),
            member!("fh_upcalls", Upcalls, observe),
            member!("fh_upcalls", Upcalls, release_observers),
            member!("fh_upcalls", Upcalls, finish),
            member!("fh_upcalls", Upcalls, release_native_owner),
            size!("fh_context", Context),
            member!("fh_context", Context, generation),
            member!("fh_context", Context, code_extra_index),
            member!("fh_context", Context, upcalls),
            member!("fh_context", Context, native_chain),
            member!("fh_context", Context, native_chain_readers),
            size!("fh_code_state_head", CodeStateHead),
            member!("fh_code_state_head", CodeStateHead, declined_in),
            member!("fh_code_state_head", CodeStateHead, replaced_in),
            member!("fh_code_state_head", CodeStateHead, replacement),
            ("FH_GENERATION_OBSERVING", GENERATION_OBSERVING as usize),
            ("FH_GENERATION_NATIVE_CHAIN", GENERATION_NATIVE_CHAIN as usize),
            ("FH_GENERATION_SCOPED", GENERATION_SCOPED as usize),
            ("FH_GENERATION_STEP", GENERATION_STEP as usize),
        ]
    }

    #[test]
    fn contract_header_matches_the_rust_mirror() {
        // SAFETY: constants defined by contract_layout.c: an array of
        // `framehook_contract_layout_len` entries with static, NUL-terminated names.
        let from_c: Vec<(&str, usize)> = unsafe {
            std::slice::from_raw_parts(framehook_contract_layout.as_ptr(), framehook_contract_layout_len)
                .iter()
                .map(|entry| {
                    (
                        CStr::from_ptr(entry.name).to_str().expect("ASCII names"),
                        entry.value,
                    )
                })
                .collect()
        };
        assert_eq!(from_c, rust_layout());
    }
}
