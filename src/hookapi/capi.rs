//! The C API for native hooks (`framehook.h`), published as the capsule
//! `framehook._native._C_API`. Native hooks join the same registry and chain
//! as Python hooks; only the way they are called differs.

use std::ffi::{c_int, c_uint, CStr};
use std::ptr;

use framehook_capi::ffi::{self, framehook_api, framehook_frame, framehook_hook_spec};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::pyobject::type_name;
use super::registry::{Hook, HookHandle, NativeData, Observer, OnError, Registry, Transform};
use crate::pep523_backend::{new_error, FrameView, NativeFrameRaw};

/// What a native hook function receives as its `framehook_frame`: the
/// contract's `fh_native_frame`, which the eval function also builds itself
/// for chains of native hooks it calls directly.
#[repr(transparent)]
pub(crate) struct NativeFrame(NativeFrameRaw);

impl NativeFrame {
    pub fn new(view: &FrameView<'_>, current: &Bound<'_, PyAny>, original: &Bound<'_, PyAny>) -> Self {
        Self(view.native_frame(current, original))
    }

    pub fn as_ffi(&self) -> *const framehook_frame {
        ptr::from_ref(self).cast()
    }

    /// # Safety
    /// `frame` must be what a hook function that is still running was given
    /// (by [`NativeFrame::as_ffi`] or by the eval function).
    unsafe fn from_ffi<'a>(frame: *const framehook_frame) -> &'a Self {
        // SAFETY: guaranteed by the caller.
        unsafe { &*frame.cast::<Self>() }
    }

    fn view(&self) -> FrameView<'_> {
        // SAFETY: a NativeFrame only exists while its frame is being dispatched,
        // on the thread that made it (the hook function's call).
        unsafe { FrameView::from_upcall(self.0.view) }
    }

    fn current(&self) -> *mut pyo3::ffi::PyObject {
        self.0.current
    }

    fn original(&self) -> *mut pyo3::ffi::PyObject {
        self.0.original
    }
}

fn to_ffi_result(py: Python<'_>, result: PyResult<Bound<'_, PyAny>>) -> *mut pyo3::ffi::PyObject {
    match result {
        Ok(object) => object.into_ptr(),
        Err(err) => {
            err.restore(py);
            ptr::null_mut()
        }
    }
}

fn to_status(py: Python<'_>, result: PyResult<()>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(err) => {
            err.restore(py);
            -1
        }
    }
}

unsafe extern "C" fn add_hook(spec: *const framehook_hook_spec) -> *mut pyo3::ffi::PyObject {
    // SAFETY: the C API is called attached.
    let py = unsafe { Python::assume_attached() };
    if spec.is_null() {
        new_error::<PyValueError>(py, "framehook add_hook: spec is NULL").restore(py);
        return ptr::null_mut();
    }
    // SAFETY: a non-NULL spec points to a framehook_hook_spec whose `size` says how
    // much of it the caller filled; we check that before reading further members.
    let result = unsafe { add_hook_from_spec(py, spec) };
    to_ffi_result(py, result)
}

/// # Safety
/// `spec` must point to a readable framehook_hook_spec of at least `spec.size` bytes.
unsafe fn add_hook_from_spec<'py>(
    py: Python<'py>,
    spec: *const framehook_hook_spec,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `size` is the first member, readable in any version of the struct.
    let size = unsafe { (*spec).size };
    if size < std::mem::size_of::<framehook_hook_spec>() {
        return Err(new_error::<PyValueError>(py, format!(
            "framehook add_hook: spec.size is {size}, expected at least {} (set it to sizeof(framehook_hook_spec))",
            std::mem::size_of::<framehook_hook_spec>()
        )));
    }
    // SAFETY: checked above that the caller's struct has all our members.
    let spec = unsafe { &*spec };
    let name = if spec.name.is_null() {
        "<native hook>".to_owned()
    } else {
        // SAFETY: the header requires a NUL-terminated string.
        unsafe { CStr::from_ptr(spec.name) }
            .to_str()
            .map_err(|_| new_error::<PyValueError>(py, "framehook add_hook: the hook name is not UTF-8"))?
            .to_owned()
    };
    if spec.hook.is_none() && spec.observe.is_none() {
        return Err(new_error::<PyValueError>(
            py,
            format!("native hook {name:?} has neither a hook nor an observe function"),
        ));
    }
    let on_error = match spec.on_error {
        ffi::FRAMEHOOK_ON_ERROR_RAISE => OnError::Raise,
        ffi::FRAMEHOOK_ON_ERROR_LOG => OnError::Log,
        other => {
            return Err(new_error::<PyValueError>(py, format!(
                "native hook {name:?}: on_error must be FRAMEHOOK_ON_ERROR_RAISE or FRAMEHOOK_ON_ERROR_LOG, not {other}"
            )))
        }
    };
    let registry = Registry::current(py)?;
    let mut hook = std::sync::Arc::new(Hook::new(
        name,
        spec.hook.map(Transform::Native),
        spec.observe.map(Observer::Native),
        spec.cache != 0,
        on_error,
        Some(NativeData::new(spec.user_data, spec.free_user_data)),
    ));
    if let Err(err) = registry.add(py, std::sync::Arc::clone(&hook)) {
        // The registry holds no reference after a failed add: the user data is the caller's again.
        if let Some(data) = std::sync::Arc::get_mut(&mut hook).and_then(|hook| hook.native_data.as_mut()) {
            data.disown();
        }
        return Err(err);
    }
    registry
        .types
        .new_handle(py, hook, std::sync::Arc::clone(&registry))
}

fn with_handle(
    py: Python<'_>,
    handle: *mut pyo3::ffi::PyObject,
    action: impl FnOnce(&HookHandle) -> PyResult<()>,
) -> c_int {
    if handle.is_null() {
        return to_status(
            py,
            Err(new_error::<PyTypeError>(py, "framehook: the hook handle is NULL")),
        );
    }
    // SAFETY: a non-NULL handle is a live object the caller owns a reference to.
    let handle = unsafe { Borrowed::from_ptr(py, handle) };
    let registry = match Registry::current(py) {
        Ok(registry) => registry,
        Err(err) => return to_status(py, Err(err)),
    };
    let result = match registry.types.handle.value(&handle) {
        Some(handle) => action(handle),
        None => Err(new_error::<PyTypeError>(
            py,
            format!(
                "framehook: expected a framehook.HookHandle, not {}",
                type_name(&handle)
            ),
        )),
    };
    to_status(py, result)
}

unsafe extern "C" fn remove_hook(handle: *mut pyo3::ffi::PyObject) -> c_int {
    // SAFETY: the C API is called attached.
    let py = unsafe { Python::assume_attached() };
    with_handle(py, handle, |handle| handle.remove(py))
}

unsafe extern "C" fn set_enabled(handle: *mut pyo3::ffi::PyObject, enabled: c_int) -> c_int {
    // SAFETY: the C API is called attached.
    let py = unsafe { Python::assume_attached() };
    with_handle(py, handle, |handle| {
        handle.set_enabled_in(py, enabled != 0);
        Ok(())
    })
}

unsafe extern "C" fn frame_code(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: hook functions pass the frame they received, during their call.
    unsafe { NativeFrame::from_ffi(frame) }.current()
}

unsafe extern "C" fn frame_original_code(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: as for frame_code.
    unsafe { NativeFrame::from_ffi(frame) }.original()
}

unsafe extern "C" fn frame_globals(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: as for frame_code; attached during the hook call.
    let (frame, py) = unsafe { (NativeFrame::from_ffi(frame), Python::assume_attached()) };
    // Borrowed: the frame keeps its globals alive.
    frame.view().globals(py).as_ptr()
}

unsafe extern "C" fn frame_builtins(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: as for frame_globals.
    let (frame, py) = unsafe { (NativeFrame::from_ffi(frame), Python::assume_attached()) };
    frame.view().builtins(py).as_ptr()
}

unsafe extern "C" fn frame_locals(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: as for frame_globals.
    let (frame, py) = unsafe { (NativeFrame::from_ffi(frame), Python::assume_attached()) };
    to_ffi_result(py, frame.view().locals(py))
}

unsafe extern "C" fn frame_back(frame: *const framehook_frame) -> *mut pyo3::ffi::PyObject {
    // SAFETY: as for frame_globals.
    let (frame, py) = unsafe { (NativeFrame::from_ffi(frame), Python::assume_attached()) };
    to_ffi_result(py, frame.view().back(py))
}

/// The table behind the capsule; Rust code in this crate may use it directly.
pub static API: framehook_api = framehook_api {
    version: ffi::FRAMEHOOK_API_VERSION as c_uint,
    size: std::mem::size_of::<framehook_api>(),
    add_hook,
    remove_hook,
    set_enabled,
    frame_code,
    frame_original_code,
    frame_globals,
    frame_builtins,
    frame_locals,
    frame_back,
};

/// Publishes [`API`] as `framehook._native._C_API` (in each interpreter's module).
pub fn add_capsule(module: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = module.py();
    // SAFETY: attached; the pointer and the name are static, so the capsule needs no destructor.
    let capsule = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyCapsule_New(
                ptr::from_ref(&API).cast_mut().cast(),
                ffi::FRAMEHOOK_CAPSULE_NAME.as_ptr(),
                None,
            ),
        )?
    };
    module.setattr("_C_API", capsule)
}

#[cfg(test)]
mod tests {
    extern "C" {
        static framehook_capi_layout: [usize; 21];
    }

    #[test]
    fn header_structs_match_the_rust_mirror() {
        // SAFETY: a constant array defined by capi_layout.c.
        let from_c = unsafe { framehook_capi_layout };
        assert_eq!(from_c, framehook_capi::ffi::layout());
    }
}
