//! The numpy backend's face of the fused kernels: `_sot_fused_kernel(program,
//! dtype)` decodes a program once, at graph compile time, into a capsule with
//! the dtype object its arrays hold, and `_sot_fused(plan, *operands)` runs it,
//! where `plan` is `(capsule, allocate, layouts)`: the `numpy.empty` that makes
//! each result of its `(shape, dtype)` layout. A program's matrix products run
//! numpy's own matmul loop (found by `_sot_fused_check_matmul`), called as
//! numpy's ufunc machinery calls it.
//!
//! Arrays are read as numpy's own C API reads them, through the fields of
//! numpy's array object ([`ArrayFields`]): the buffer protocol would make numpy
//! describe every new array it exports (a format string, shape and strides
//! copied), which costs more than the arithmetic on small arrays. The layout is
//! checked against the running numpy (`_sot_fused_check_layout`) before any
//! kernel runs, and only exact instances of the array type checked so are read. `_sot_fused` returns the results, or None where the operands
//! are not as the program describes them (type, dtype, shape, an unaligned
//! array, one whose axes are not in C order by their strides, where numpy would
//! order its results likewise) or the kernel gave up: the caller then runs the
//! operations through numpy.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyFloat, PyInt, PyTuple, PyType};

use super::{run, Float, Input, Matrix, OperandSpec, Products, Program, Unexact, MAX_DIMENSIONS};

const CAPSULE_NAME: &CStr = c"framehook.sot.fused_kernel";

/// The head of numpy's `PyArrayObject_fields` (numpy/ndarraytypes.h), the
/// fields the `PyArray_DATA`, `PyArray_NDIM`, `PyArray_DIMS`,
/// `PyArray_STRIDES`, `PyArray_DESCR` and `PyArray_FLAGS` macros of its C API
/// read: the same in numpy 1.x and 2.x, after the build's `PyObject` head.
#[repr(C)]
struct ArrayFields {
    head: ffi::PyObject,
    data: *mut u8,
    nd: c_int,
    dimensions: *const ffi::Py_ssize_t,
    strides: *const ffi::Py_ssize_t,
    base: *mut ffi::PyObject,
    descr: *mut ffi::PyObject,
    flags: c_int,
}

// numpy's array flags (numpy/ndarraytypes.h).
const C_CONTIGUOUS: c_int = 0x0001;
const ALIGNED: c_int = 0x0100;
const WRITEABLE: c_int = 0x0400;

/// numpy's array type, once `_sot_fused_check_layout` found [`ArrayFields`] to be
/// its layout: the only type whose instances the kernels read.
static ARRAY_TYPE: OnceLock<Py<PyType>> = OnceLock::new();

/// Kernel calls that returned results, and that gave up (`_sot_fused_calls`).
static RAN: AtomicU64 = AtomicU64::new(0);
static GAVE_UP: AtomicU64 = AtomicU64::new(0);

/// `_sot_fused_calls() -> (ran, gave_up)`: the process's fused-kernel calls that
/// returned results, and those that returned None (numpy's calls ran instead).
#[pyfunction]
fn _sot_fused_calls() -> (u64, u64) {
    (RAN.load(Ordering::Relaxed), GAVE_UP.load(Ordering::Relaxed))
}

/// An array's fields, read through [`ArrayFields`]: its shape and strides are
/// numpy's own, borrowed while the array is held.
struct ArrayView<'a> {
    data: *mut u8,
    base: *mut ffi::PyObject,
    shape: &'a [ffi::Py_ssize_t],
    strides: &'a [ffi::Py_ssize_t],
    descr: *mut ffi::PyObject,
    flags: c_int,
}

impl ArrayView<'_> {
    fn has_shape(&self, shape: &[usize]) -> bool {
        self.shape.len() == shape.len()
            && self
                .shape
                .iter()
                .zip(shape)
                .all(|(&extent, &expected)| extent as usize == expected)
    }
}

/// The fields of `array` where it is an exact instance of numpy's array type, its
/// layout checked; None otherwise.
fn array_view<'a>(array: &'a Bound<'_, PyAny>) -> Option<ArrayView<'a>> {
    let checked = ARRAY_TYPE.get()?;
    // SAFETY: an exact instance of the array type whose layout was checked.
    array
        .get_type()
        .is(checked.bind(array.py()))
        .then(|| unsafe { read_fields(array) })
}

/// # Safety
///
/// `array` is an exact `numpy.ndarray`, whose object begins with the fields
/// `ArrayFields` mirrors.
unsafe fn read_fields<'a>(array: &'a Bound<'_, PyAny>) -> ArrayView<'a> {
    // SAFETY: as the caller guarantees.
    let fields = unsafe { &*array.as_ptr().cast::<ArrayFields>() };
    let dimensions = usize::try_from(fields.nd).unwrap_or(0);
    let (shape, strides): (&[ffi::Py_ssize_t], &[ffi::Py_ssize_t]) = if dimensions == 0 {
        (&[], &[])
    } else {
        // SAFETY: numpy's `dimensions` and `strides` hold `nd` items each, and
        // live as long as the array, which `array` holds.
        unsafe {
            (
                std::slice::from_raw_parts(fields.dimensions, dimensions),
                std::slice::from_raw_parts(fields.strides, dimensions),
            )
        }
    };
    ArrayView {
        data: fields.data,
        base: fields.base,
        shape,
        strides,
        descr: fields.descr,
        flags: fields.flags,
    }
}

/// `_sot_fused_check_layout(array, data, shape, strides) -> bool`: whether
/// numpy's array fields are where [`ArrayFields`] puts them, judged on a
/// `numpy.ndarray` of more than one dimension whose data address, shape and
/// strides Python read (through `__array_interface__`); from then on kernels
/// may read that type's exact instances.
#[pyfunction]
fn _sot_fused_check_layout(
    array: &Bound<'_, PyAny>,
    data: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
) -> bool {
    let ty = array.get_type();
    if !is_numpy_type_holding::<ArrayFields>(&ty, "ndarray") || shape.len() < 2 {
        return false;
    }
    // SAFETY: the object is at least as large as these fields (its type's basic
    // size). Only the data pointer and the dimension count are read before they
    // are found where the mirror puts them.
    let fields = unsafe { &*array.as_ptr().cast::<ArrayFields>() };
    if fields.data as usize != data || usize::try_from(fields.nd).ok() != Some(shape.len()) {
        return false;
    }
    // SAFETY: numpy's array, whose data and dimension count are where the mirror
    // puts them.
    let view = unsafe { read_fields(array) };
    let matches = view.has_shape(&shape) && view.strides == strides;
    if matches {
        let checked = ARRAY_TYPE.get_or_init(|| ty.clone().unbind());
        return checked.bind(array.py()).is(&ty);
    }
    false
}

/// A legacy ufunc inner loop (numpy/ufuncobject.h's `PyUFuncGenericFunction`).
type GenericLoop =
    unsafe extern "C" fn(*mut *mut c_char, *const ffi::Py_ssize_t, *const ffi::Py_ssize_t, *mut c_void);

/// The head of numpy's `PyUFuncObject` (numpy/ufuncobject.h), up to the loops'
/// type numbers: the same in numpy 1.x and 2.x, after the build's `PyObject` head.
#[repr(C)]
struct UfuncFields {
    head: ffi::PyObject,
    nin: c_int,
    nout: c_int,
    nargs: c_int,
    identity: c_int,
    functions: *const Option<GenericLoop>,
    data: *const *mut c_void,
    ntypes: c_int,
    flags: c_int,
    name: *const c_char,
    types: *const c_char,
}

/// numpy's matmul loop for one dtype, and the data numpy passes it.
#[derive(Clone, Copy)]
struct MatmulLoop {
    function: GenericLoop,
    data: *mut c_void,
}

/// The float32 and float64 matmul loops, found once; the ufunc is held so that
/// they stay alive.
struct MatmulLoops {
    float32: MatmulLoop,
    float64: MatmulLoop,
    ufunc: Py<PyAny>,
}

// SAFETY: the loops are numpy's functions and their (immutable) data, alive
// while the ufunc is (held here); numpy calls them from any thread.
unsafe impl Send for MatmulLoops {}
// SAFETY: as for Send: nothing here is written after it is found.
unsafe impl Sync for MatmulLoops {}

static MATMUL_LOOPS: OnceLock<MatmulLoops> = OnceLock::new();

/// `_sot_fused_check_matmul(matmul, float32_number, float64_number) -> bool`:
/// whether `numpy.matmul`'s fields are where [`UfuncFields`] puts them and its
/// loops for `ff->f` and `dd->d` were found (by its `types`, which list them in
/// the order of its loops, and the dtypes' type numbers); from then on programs
/// with matrix products run them.
#[pyfunction]
fn _sot_fused_check_matmul(
    matmul: &Bound<'_, PyAny>,
    float32_number: c_char,
    float64_number: c_char,
) -> bool {
    if let Some(found) = MATMUL_LOOPS.get() {
        return found.ufunc.bind(matmul.py()).is(matmul);
    }
    let ty = matmul.get_type();
    let is_matmul = matmul
        .getattr(pyo3::intern!(matmul.py(), "__name__"))
        .and_then(|v| v.extract::<String>())
        .is_ok_and(|v| v == "matmul");
    let Ok(types) = matmul.getattr("types").and_then(|t| t.extract::<Vec<String>>()) else {
        return false;
    };
    if !is_numpy_type_holding::<UfuncFields>(&ty, "ufunc") || !is_matmul {
        return false;
    }
    // SAFETY: the object is at least as large as these fields (its type's basic
    // size); the pointers are followed only once the counts and the name are
    // found where the mirror puts them.
    let fields = unsafe { &*matmul.as_ptr().cast::<UfuncFields>() };
    let counts_match = (fields.nin, fields.nout, fields.nargs) == (2, 1, 3)
        && usize::try_from(fields.ntypes).ok() == Some(types.len())
        && !fields.name.is_null()
        && !fields.functions.is_null()
        && !fields.data.is_null()
        && !fields.types.is_null();
    // SAFETY: a non-null C string of the ufunc's, where the counts matched.
    if !counts_match || unsafe { CStr::from_ptr(fields.name) }.to_bytes() != b"matmul" {
        return false;
    }
    let find = |signature: &str, number: c_char| -> Option<MatmulLoop> {
        let at = types.iter().position(|t| t == signature)?;
        // SAFETY: `types` holds `nargs * ntypes` type numbers and `functions` and
        // `data` `ntypes` entries (counts checked above); `at < ntypes`.
        unsafe {
            let numbers = std::slice::from_raw_parts(fields.types.add(3 * at), 3);
            if numbers.iter().any(|&n| n != number) {
                return None;
            }
            Some(MatmulLoop {
                function: (*fields.functions.add(at))?,
                data: *fields.data.add(at),
            })
        }
    };
    let (Some(float32), Some(float64)) = (find("ff->f", float32_number), find("dd->d", float64_number))
    else {
        return false;
    };
    MATMUL_LOOPS.get_or_init(|| MatmulLoops {
        float32,
        float64,
        ufunc: matmul.clone().unbind(),
    });
    true
}

/// A program's products, by numpy's matmul loop for the item type.
struct NumpyProducts {
    matmul: Option<MatmulLoop>,
}

impl<T: Float> Products<T> for NumpyProducts {
    fn multiply(&mut self, a: Matrix<'_, T>, b: Matrix<'_, T>, result: &mut [T]) -> Result<(), Unexact> {
        let matmul = self.matmul.ok_or(Unexact)?;
        let item = std::mem::size_of::<T>() as ffi::Py_ssize_t;
        let [m, n] = a.shape;
        let p = b.shape[1];
        if a.items.is_empty() || b.items.is_empty() || result.len() != m * p || b.shape[0] != n {
            return Err(Unexact);
        }
        let mut args: [*mut c_char; 3] = [
            a.items[a.origin..].as_ptr().cast_mut().cast(),
            b.items[b.origin..].as_ptr().cast_mut().cast(),
            result.as_mut_ptr().cast(),
        ];
        // As numpy's gufunc machinery passes them for one pair of matrices: the
        // outer loop's count, then the signature's n, k, m; the outer steps, then
        // each operand's steps along its core axes (the result's a new C-order
        // array's).
        let dimensions = [
            1,
            m as ffi::Py_ssize_t,
            n as ffi::Py_ssize_t,
            p as ffi::Py_ssize_t,
        ];
        let steps = [
            0,
            0,
            0,
            a.strides[0] * item,
            a.strides[1] * item,
            b.strides[0] * item,
            b.strides[1] * item,
            p as ffi::Py_ssize_t * item,
            item,
        ];
        // SAFETY: numpy's loop for this item type (found by its type numbers),
        // given pointers to the first items of the two matrices and of the
        // result, whose shapes and strides address only their items (as the
        // slices span them), as the ufunc machinery would give it; the GIL is held.
        unsafe {
            (matmul.function)(
                args.as_mut_ptr(),
                dimensions.as_ptr(),
                steps.as_ptr(),
                matmul.data,
            );
        }
        // The loop sets an error only where it could not allocate its buffer.
        // SAFETY: the GIL is held.
        if unsafe { !ffi::PyErr_Occurred().is_null() } {
            // SAFETY: the GIL is held; numpy's own call, run instead, raises it again.
            unsafe { ffi::PyErr_Clear() };
            return Err(Unexact);
        }
        Ok(())
    }
}

/// Whether `ty` is numpy's class `qualname` and its objects are at least as large
/// as `Fields`, the head of them a mirror reads.
fn is_numpy_type_holding<Fields>(ty: &Bound<'_, PyType>, qualname: &str) -> bool {
    let named = |attribute: &str, expected: &str| {
        ty.getattr(attribute)
            .and_then(|v| v.extract::<String>())
            .is_ok_and(|v| v == expected)
    };
    let large_enough = ty
        .getattr(pyo3::intern!(ty.py(), "__basicsize__"))
        .and_then(|size| size.extract::<usize>())
        .is_ok_and(|size| size >= std::mem::size_of::<Fields>());
    named("__module__", "numpy") && named("__qualname__", qualname) && large_enough
}

/// A decoded program and the dtype object of its arrays (checked to be a native
/// float of the program's item size).
struct Kernel {
    program: Program,
    dtype: Py<PyAny>,
}

/// `_sot_fused_kernel(program: bytes, dtype) -> capsule`.
#[pyfunction]
fn _sot_fused_kernel<'py>(
    program: &Bound<'py, PyBytes>,
    dtype: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let decoded = Program::decode(program.as_bytes())
        .map_err(|reason| PyValueError::new_err(format!("not a fused kernel program: {reason}")))?;
    let float_of_size = dtype
        .getattr("kind")
        .and_then(|k| k.extract::<String>())
        .is_ok_and(|k| k == "f")
        && dtype
            .getattr("isnative")
            .and_then(|n| n.extract::<bool>())
            .unwrap_or(false)
        && dtype
            .getattr("itemsize")
            .and_then(|n| n.extract::<u32>())
            .is_ok_and(|n| n == decoded.item_size);
    if !float_of_size {
        return Err(PyValueError::new_err(format!(
            "a fused kernel's dtype must be a native float of {} bytes, not {}",
            decoded.item_size,
            dtype.repr()?
        )));
    }
    let kernel = Kernel {
        program: decoded,
        dtype: dtype.clone().unbind(),
    };
    PyCapsule::new(program.py(), kernel, Some(CAPSULE_NAME.to_owned()))
}

/// `(capsule, allocate, layouts)`.
type Plan<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyAny>, Bound<'py, PyTuple>);

/// `_sot_fused(plan, *operands) -> tuple | None`.
#[pyfunction(signature = (plan, *operands))]
fn _sot_fused<'py>(
    plan: &Bound<'py, PyTuple>,
    operands: &Bound<'py, PyTuple>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (capsule, allocate, layouts): Plan<'py> = plan.extract()?;
    let pointer = capsule.pointer_checked(Some(CAPSULE_NAME))?;
    // SAFETY: a capsule of this name is made only by `_sot_fused_kernel`, from
    // a `Kernel` it owns until it is freed; `capsule` keeps it alive here.
    let kernel = unsafe { pointer.cast::<Kernel>().as_ref() };
    let arrays = Arrays {
        dtype: kernel.dtype.as_ptr(),
    };
    let program = &kernel.program;
    let results = if program.item_size == f32::ITEM_SIZE {
        fused::<f32>(program, &arrays, &allocate, &layouts, operands)
    } else {
        fused::<f64>(program, &arrays, &allocate, &layouts, operands)
    }?;
    let counter = if results.is_some() { &RAN } else { &GAVE_UP };
    counter.fetch_add(1, Ordering::Relaxed);
    Ok(results)
}

/// What every array operand and result is: numpy's array, of this dtype object.
struct Arrays {
    dtype: *mut ffi::PyObject,
}

impl Arrays {
    /// An array's fields, where it is one of these arrays, aligned.
    fn view<'a>(&self, value: &'a Bound<'_, PyAny>) -> Option<ArrayView<'a>> {
        array_view(value).filter(|view| view.descr == self.dtype && view.flags & ALIGNED != 0)
    }
}

/// An array operand as the kernel reads it, where it is as the program
/// describes it: the slice spanning its items, and where item 0 lies in it.
fn array_input<'a, T: Float>(view: &ArrayView<'_>, shape: &[usize], ordered: bool) -> Option<Input<'a, T>> {
    let item = std::mem::size_of::<T>() as isize;
    if !view.has_shape(shape) || view.strides.iter().any(|stride| stride % item != 0) {
        return None;
    }
    // numpy orders a new elementwise array's axes by its operands' strides where
    // they step along two axes or more: results in C order need such operands'
    // strides to fall, axis after axis, where they vary (a slice of a larger
    // array too). A product's result is in C order whatever its operands' are.
    let mut varying = shape
        .iter()
        .zip(view.strides)
        .filter(|(&extent, _)| extent > 1)
        .map(|(_, &stride)| stride);
    if let Some(first) = varying.next().filter(|_| ordered) {
        let mut previous = first;
        for stride in varying {
            if stride >= previous || stride <= 0 {
                return None;
            }
            previous = stride;
        }
    }
    let mut strides = [0; MAX_DIMENSIONS];
    for (to, &stride) in strides.iter_mut().zip(view.strides) {
        *to = stride / item;
    }
    let (mut lowest, mut highest) = (0isize, 0isize);
    for (&extent, &stride) in shape.iter().zip(&strides) {
        let reach = (extent as isize - 1) * stride;
        if reach < 0 {
            lowest += reach;
        } else {
            highest += reach;
        }
    }
    // SAFETY: numpy's shape and strides address valid, aligned items of the
    // array (alive while the caller holds it, until the kernel ends); these are
    // the lowest and highest of them. Another thread writing the array
    // meanwhile races with this read as it would with numpy's own loops.
    let items = unsafe {
        std::slice::from_raw_parts(
            view.data.cast::<T>().offset(lowest).cast_const(),
            (highest - lowest + 1) as usize,
        )
    };
    Some(Input::Array {
        items,
        origin: (-lowest) as usize,
        strides,
    })
}

fn fused<'py, T: Float>(
    program: &Program,
    arrays: &Arrays,
    allocate: &Bound<'py, PyAny>,
    layouts: &Bound<'py, PyTuple>,
    operands: &Bound<'py, PyTuple>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = operands.py();
    if operands.len() != program.operands.len() || layouts.len() != program.outputs() {
        return Ok(None);
    }
    let mut inputs: Vec<Input<'_, T>> = Vec::with_capacity(operands.len());
    for (at, (value, spec)) in operands.iter().zip(&program.operands).enumerate() {
        let input = match spec {
            OperandSpec::Number => number(&value, program.item_size).map(Input::Number),
            OperandSpec::Array(shape) => arrays
                .view(&value)
                .and_then(|view| array_input(&view, shape, program.read_elementwise(at))),
        };
        match input {
            Some(input) => inputs.push(input),
            None => return Ok(None),
        }
    }
    let results: Vec<Bound<'py, PyAny>> = layouts
        .iter()
        .map(|layout| allocate.call1(layout.cast_into::<PyTuple>()?))
        .collect::<PyResult<_>>()?;
    let mut outputs: Vec<&mut [T]> = Vec::with_capacity(results.len());
    for (result, register) in results.iter().zip(
        program
            .registers
            .iter()
            .filter(|register| register.output.is_some()),
    ) {
        // A new array: held here only, owning its memory (no base), so that no
        // other slice of the kernel's reaches it.
        // SAFETY: `result` is a live object.
        let alone = unsafe { ffi::Py_REFCNT(result.as_ptr()) } == 1;
        let view = arrays.view(result).filter(|view| {
            alone
                && view.base.is_null()
                && view.flags & C_CONTIGUOUS != 0
                && view.flags & WRITEABLE != 0
                && view.has_shape(&register.shape)
        });
        let Some(view) = view else {
            return Err(PyValueError::new_err(
                "a fused kernel's allocator did not make a new C-order array of the result's shape and dtype",
            ));
        };
        // SAFETY: a new, writable, aligned, C-contiguous array of the register's
        // items, of the kernel's dtype (its item size checked), that no one else
        // holds; `results` keeps it alive.
        outputs.push(unsafe { std::slice::from_raw_parts_mut(view.data.cast::<T>(), register.items()) });
    }
    let loops = MATMUL_LOOPS.get();
    let mut products = NumpyProducts {
        matmul: loops.map(|loops| {
            if program.item_size == f32::ITEM_SIZE {
                loops.float32
            } else {
                loops.float64
            }
        }),
    };
    let ran = run(program, &inputs, &mut outputs, &mut products);
    drop((outputs, inputs));
    match ran {
        Ok(()) => Ok(Some(PyTuple::new(py, results)?)),
        Err(_) => Ok(None),
    }
}

/// A Python number as the kernel takes it: a float, or an int an array of this
/// item size holds exactly (NEP 50 converts both beside an array; the kernel
/// converts them to the item type, where a flag the cast raises is seen).
fn number(value: &Bound<'_, PyAny>, item_size: u32) -> Option<f64> {
    if value.is_exact_instance_of::<PyFloat>() {
        return value.extract::<f64>().ok();
    }
    if value.is_exact_instance_of::<PyInt>() {
        let integer = value.extract::<i64>().ok()?;
        let mantissa = if item_size == f32::ITEM_SIZE {
            f32::MANTISSA_DIGITS
        } else {
            f64::MANTISSA_DIGITS
        };
        #[allow(clippy::cast_precision_loss)]
        return (integer.unsigned_abs() <= 1u64 << mantissa).then_some(integer as f64);
    }
    None
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(_sot_fused_check_layout, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_fused_check_matmul, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_fused_calls, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_fused_kernel, module)?)?;
    module.add_function(wrap_pyfunction!(_sot_fused, module)?)?;
    Ok(())
}
