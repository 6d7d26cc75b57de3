//! Fused elementwise kernels for SOT's numpy backend: a run of a graph's
//! elementwise operations on float32 or float64 arrays evaluated in one call,
//! where numpy makes one ufunc call (and one new array) per operation, which on
//! small arrays costs far more than the arithmetic.
//!
//! Results are numpy's bit for bit. Only operations IEEE 754 rounds exactly are
//! fused (add, subtract, multiply, divide, square root and the sign and square
//! forms of those), each computed in the arrays' own type as numpy's loops
//! compute them. Where the arithmetic sets a floating-point flag numpy reports
//! (invalid, divide by zero, overflow, underflow: the hardware's own flags,
//! read as numpy reads them after each loop), the kernel gives up
//! ([`Unexact`]) before its caller sees any result, and the caller runs the
//! operations through numpy, which warns or raises as it always does.
//!
//! No Python here: a program is decoded from words the backend writes, and run
//! on slices; `python.rs` binds it to arrays through the buffer protocol.

pub mod python;

use std::ops::{Add, Div, Mul, Neg, Sub};

/// The floating-point types a kernel computes in.
pub trait Float:
    Copy
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    /// Bytes per item, as programs name their element type.
    const ITEM_SIZE: u32;
    /// The value converted as numpy converts a Python float beside an array of
    /// this type (NEP 50: a C cast, rounding to nearest).
    fn from_f64(value: f64) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
}

macro_rules! float {
    ($type:ty, $size:expr) => {
        impl Float for $type {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const ITEM_SIZE: u32 = $size;
            #[allow(clippy::cast_possible_truncation)]
            fn from_f64(value: f64) -> Self {
                value as $type
            }
            fn sqrt(self) -> Self {
                <$type>::sqrt(self)
            }
            fn abs(self) -> Self {
                <$type>::abs(self)
            }
        }
    };
}
float!(f32, 4);
float!(f64, 8);

/// The operations a kernel fuses: numpy's ufunc of the same name on one dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
    Negative,
    Positive,
    Square,
    Sqrt,
    Reciprocal,
    Absolute,
    /// `maximum.reduce` over the last axis, keeping it (of extent 1).
    MaximumLast,
    /// `minimum.reduce` over the last axis, keeping it.
    MinimumLast,
}

/// The operations in the order of their codes in a program.
const OPERATIONS: [Operation; 12] = [
    Operation::Add,
    Operation::Subtract,
    Operation::Multiply,
    Operation::Divide,
    Operation::Negative,
    Operation::Positive,
    Operation::Square,
    Operation::Sqrt,
    Operation::Reciprocal,
    Operation::Absolute,
    Operation::MaximumLast,
    Operation::MinimumLast,
];

impl Operation {
    fn binary(self) -> bool {
        matches!(self, Self::Add | Self::Subtract | Self::Multiply | Self::Divide)
    }

    fn reduction(self) -> bool {
        matches!(self, Self::MaximumLast | Self::MinimumLast)
    }

    #[inline(always)]
    fn apply<T: Float>(self, a: T, b: T) -> T {
        match self {
            Self::Add => a + b,
            Self::Subtract => a - b,
            Self::Multiply => a * b,
            Self::Divide => a / b,
            Self::Negative => -a,
            Self::Positive => a,
            Self::Square => a * a,
            Self::Sqrt => a.sqrt(),
            Self::Reciprocal => T::ONE / a,
            Self::Absolute => a.abs(),
            // The reductions' step (see `reduce_last`).
            Self::MaximumLast => {
                if b > a {
                    b
                } else {
                    a
                }
            }
            Self::MinimumLast => {
                if b < a {
                    b
                } else {
                    a
                }
            }
        }
    }
}

/// Where an instruction reads a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A call argument: an array or a Python number.
    Operand(usize),
    /// An earlier instruction's result.
    Register(usize),
    /// A number of the program.
    Constant(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandSpec {
    /// A Python number, converted to the element type as numpy converts it.
    Number,
    /// An array of this shape and the element type, of any strides.
    Array(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    pub shape: Vec<usize>,
    /// The position among the call's results of a register the caller gets
    /// back (its memory is then the caller's array), else None (scratch).
    pub output: Option<usize>,
}

impl Register {
    pub fn items(&self) -> usize {
        self.shape.iter().product()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub operation: Operation,
    /// The register written: instruction `i` writes register `i`.
    pub sources: [Source; 2],
}

/// A decoded, checked program: every shape broadcasts as the instructions use
/// it, every source exists before it is read.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub item_size: u32,
    pub operands: Vec<OperandSpec>,
    pub constants: Vec<f64>,
    pub registers: Vec<Register>,
    pub instructions: Vec<Instruction>,
    outputs: usize,
}

/// The kernel gave up: a value numpy would have reported (see the module's
/// documentation), or an argument not as the program describes it. Nothing the
/// caller can see was written.
#[derive(Debug, PartialEq, Eq)]
pub struct Unexact;

const SOURCE_TAG_SHIFT: u32 = 30;
const SOURCE_INDEX_MASK: u32 = (1 << SOURCE_TAG_SHIFT) - 1;
/// The second source of a unary instruction.
const NO_SOURCE: u32 = u32::MAX;
/// Larger shapes are not what fusion is for; the limit keeps sizes far from overflow.
const MAX_ITEMS: usize = 1 << 28;
/// numpy allows 64; fusion is for small arrays of a few dimensions.
pub const MAX_DIMENSIONS: usize = 8;

struct Words<'a> {
    words: std::slice::ChunksExact<'a, u8>,
}

impl Words<'_> {
    fn next(&mut self) -> Result<u32, String> {
        self.words
            .next()
            .map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
            .ok_or_else(|| "the program ends early".to_owned())
    }

    fn count(&mut self, what: &str, limit: usize) -> Result<usize, String> {
        let count = self.next()? as usize;
        if count > limit {
            return Err(format!("{count} {what} (at most {limit})"));
        }
        Ok(count)
    }

    fn shape(&mut self) -> Result<Vec<usize>, String> {
        let dimensions = self.count("dimensions", MAX_DIMENSIONS)?;
        let shape = (0..dimensions)
            .map(|_| self.next().map(|extent| extent as usize))
            .collect::<Result<Vec<_>, _>>()?;
        let mut items: usize = 1;
        for &extent in &shape {
            items = items.saturating_mul(extent);
        }
        if items > MAX_ITEMS {
            return Err(format!("a shape of {items} items (at most {MAX_ITEMS})"));
        }
        Ok(shape)
    }
}

/// Whether `shape` broadcasts to `target` as numpy broadcasts an operand to a
/// result (right-aligned, each extent equal or 1).
fn broadcasts(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len()
        && shape
            .iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&extent, &to)| extent == to || extent == 1)
}

impl Program {
    /// Decodes a program from little-endian 32-bit words:
    ///
    /// - the item size (4: float32, 8: float64);
    /// - the operands: their count, then each one's kind (0: a number, 1: an
    ///   array) and an array's shape (its dimension count, then its extents);
    /// - the constants: their count, then each as the two words of an f64;
    /// - the instructions: their count, then each one's operation code, its
    ///   two sources (tag in the top two bits: 0 operand, 1 register, 2
    ///   constant; `u32::MAX` for a unary's second), its result's shape, and
    ///   where the caller gets it (0: not returned, k: the k-th result, in
    ///   register order).
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() % 4 != 0 {
            return Err(format!("a program is 32-bit words, not {} bytes", bytes.len()));
        }
        let mut words = Words {
            words: bytes.chunks_exact(4),
        };
        let item_size = words.next()?;
        if item_size != f32::ITEM_SIZE && item_size != f64::ITEM_SIZE {
            return Err(format!("item size {item_size} (4 or 8)"));
        }
        let operand_count = words.count("operands", 1 << 16)?;
        let mut operands = Vec::with_capacity(operand_count);
        for _ in 0..operand_count {
            operands.push(match words.next()? {
                0 => OperandSpec::Number,
                1 => OperandSpec::Array(words.shape()?),
                kind => return Err(format!("operand kind {kind} (0 or 1)")),
            });
        }
        let constant_count = words.count("constants", 1 << 16)?;
        let mut constants = Vec::with_capacity(constant_count);
        for _ in 0..constant_count {
            let low = u64::from(words.next()?);
            let high = u64::from(words.next()?);
            constants.push(f64::from_bits(high << 32 | low));
        }
        let instruction_count = words.count("instructions", 1 << 16)?;
        let mut registers: Vec<Register> = Vec::with_capacity(instruction_count);
        let mut instructions = Vec::with_capacity(instruction_count);
        let mut outputs = 0;
        for index in 0..instruction_count {
            let code = words.next()? as usize;
            let operation = *OPERATIONS
                .get(code)
                .ok_or_else(|| format!("operation code {code}"))?;
            let first = words.next()?;
            let second = words.next()?;
            let shape = words.shape()?;
            if shape.is_empty() || shape.contains(&0) {
                return Err(format!(
                    "instruction {index} makes an array of shape {shape:?} (not empty, not 0-d)"
                ));
            }
            let output = match words.next()? as usize {
                0 => None,
                position if position == outputs + 1 => {
                    outputs = position;
                    Some(position - 1)
                }
                position => {
                    return Err(format!(
                        "instruction {index} returned as result {position}, not {}",
                        outputs + 1
                    ))
                }
            };
            let decode_source = |word: u32| -> Result<(Source, Option<&[usize]>), String> {
                let at = (word & SOURCE_INDEX_MASK) as usize;
                match word >> SOURCE_TAG_SHIFT {
                    0 => match operands.get(at) {
                        Some(OperandSpec::Array(shape)) => Ok((Source::Operand(at), Some(shape))),
                        Some(OperandSpec::Number) => Ok((Source::Operand(at), None)),
                        None => Err(format!(
                            "instruction {index} reads operand {at} of {}",
                            operands.len()
                        )),
                    },
                    1 if at < index => Ok((Source::Register(at), Some(&registers[at].shape))),
                    2 if at < constants.len() => Ok((Source::Constant(at), None)),
                    _ => Err(format!(
                        "instruction {index} reads source {word:#x}, not defined before it"
                    )),
                }
            };
            let mut sources = [Source::Constant(0); 2];
            let arity = if operation.binary() { 2 } else { 1 };
            for (slot, word) in [first, second].into_iter().enumerate() {
                if slot >= arity {
                    if word != NO_SOURCE {
                        return Err(format!("instruction {index} is unary but names a second source"));
                    }
                    continue;
                }
                let (source, source_shape) = decode_source(word)?;
                if operation.reduction() {
                    // An array whose last axis the result keeps with extent 1.
                    let last = shape.len() - 1;
                    let reduces = source_shape.is_some_and(|from| {
                        from.len() == shape.len()
                            && from[..last] == shape[..last]
                            && shape[last] == 1
                            && from[last] > 0
                    });
                    if !reduces {
                        return Err(format!(
                            "instruction {index} reduces a source that does not reduce to {shape:?}"
                        ));
                    }
                } else if source_shape.is_some_and(|from| !broadcasts(from, &shape)) {
                    return Err(format!(
                        "instruction {index} reads a source that does not broadcast to {shape:?}"
                    ));
                }
                sources[slot] = source;
            }
            if arity == 1 {
                sources[1] = sources[0];
            }
            registers.push(Register { shape, output });
            instructions.push(Instruction { operation, sources });
        }
        if words.words.next().is_some() {
            return Err("words after the program's end".to_owned());
        }
        if outputs == 0 {
            return Err("a program returns nothing".to_owned());
        }
        Ok(Self {
            item_size,
            operands,
            constants,
            registers,
            instructions,
            outputs,
        })
    }

    /// How many arrays the caller gets back.
    pub fn outputs(&self) -> usize {
        self.outputs
    }
}

/// A call argument as the kernel reads it.
pub enum Input<'a, T> {
    /// A Python number's value, converted to `T` while the flags are watched.
    Number(f64),
    /// An array's items: element `index` (a multi-index) is at
    /// `origin + sum(index[d] * strides[d])` in `items`.
    /// Strides past the operand's dimension count are not read.
    Array {
        items: &'a [T],
        origin: usize,
        strides: [isize; MAX_DIMENSIONS],
    },
}

/// A source of one instruction, its strides aligned to the result's dimensions
/// (0 where it broadcasts).
#[derive(Clone, Copy)]
enum View<'a, T> {
    Scalar(T),
    Strided {
        items: &'a [T],
        origin: isize,
        strides: [isize; MAX_DIMENSIONS],
    },
}

impl<'a, T: Float> View<'a, T> {
    fn strided(items: &'a [T], origin: usize, shape: &[usize], strides: &[isize], target: &[usize]) -> Self {
        let mut aligned = [0; MAX_DIMENSIONS];
        let skipped = target.len() - shape.len();
        for (dimension, (&extent, &stride)) in shape.iter().zip(strides).enumerate() {
            if extent != 1 {
                aligned[skipped + dimension] = stride;
            }
        }
        Self::Strided {
            items,
            origin: origin as isize,
            strides: aligned,
        }
    }

    /// C-order items of `shape`.
    fn dense(items: &'a [T], shape: &[usize], target: &[usize]) -> Self {
        let mut strides = [0; MAX_DIMENSIONS];
        let mut step = 1isize;
        for (dimension, &extent) in shape.iter().enumerate().rev() {
            strides[dimension] = step;
            step *= extent as isize;
        }
        Self::strided(items, 0, shape, &strides[..shape.len()], target)
    }
}

/// One row (the result's last dimension) of a source.
enum Row<'a, T> {
    Scalar(T),
    Contiguous(&'a [T]),
    Strided {
        items: &'a [T],
        start: isize,
        step: isize,
    },
}

impl<T: Float> Row<'_, T> {
    #[inline(always)]
    fn at(&self, column: usize) -> T {
        match self {
            Self::Scalar(value) => *value,
            Self::Contiguous(items) => items[column],
            Self::Strided { items, start, step } => items[(start + column as isize * step) as usize],
        }
    }
}

impl<'a, T: Float> View<'a, T> {
    fn row(&self, outer: &[usize], length: usize) -> Row<'a, T> {
        match *self {
            Self::Scalar(value) => Row::Scalar(value),
            Self::Strided {
                items,
                origin,
                ref strides,
            } => {
                let last = outer.len();
                let start = origin
                    + outer
                        .iter()
                        .zip(strides)
                        .map(|(&index, &stride)| index as isize * stride)
                        .sum::<isize>();
                match strides[last] {
                    0 => Row::Scalar(items[start as usize]),
                    1 => Row::Contiguous(&items[start as usize..start as usize + length]),
                    step => Row::Strided { items, start, step },
                }
            }
        }
    }
}

/// `shape` with its unit axes dropped and each axis merged into the one before
/// it where both sources step over the pair as over one axis (the result, in C
/// order, always does): same-shape contiguous operands become one row.
fn coalesce<'a, T: Float>(
    shape: &[usize],
    a: View<'a, T>,
    b: View<'a, T>,
) -> (Shape, View<'a, T>, View<'a, T>) {
    let strides_of = |view: &View<'_, T>| match view {
        View::Scalar(_) => [0; MAX_DIMENSIONS],
        View::Strided { strides, .. } => *strides,
    };
    let (from_a, from_b) = (strides_of(&a), strides_of(&b));
    let mut merged = Shape {
        extents: [0; MAX_DIMENSIONS],
        len: 0,
    };
    let (mut to_a, mut to_b) = ([0; MAX_DIMENSIONS], [0; MAX_DIMENSIONS]);
    for (axis, &extent) in shape.iter().enumerate().filter(|&(_, &extent)| extent != 1) {
        let span = extent as isize;
        let last = merged.len.wrapping_sub(1);
        if merged.len > 0 && to_a[last] == from_a[axis] * span && to_b[last] == from_b[axis] * span {
            merged.extents[last] *= extent;
        } else {
            merged.extents[merged.len] = extent;
            merged.len += 1;
        }
        let at = merged.len - 1;
        (to_a[at], to_b[at]) = (from_a[axis], from_b[axis]);
    }
    if merged.len == 0 {
        merged = Shape {
            extents: [1; MAX_DIMENSIONS],
            len: 1,
        };
    }
    let with = |view: View<'a, T>, strides: [isize; MAX_DIMENSIONS]| match view {
        View::Scalar(value) => View::Scalar(value),
        View::Strided { items, origin, .. } => View::Strided {
            items,
            origin,
            strides,
        },
    };
    (merged, with(a, to_a), with(b, to_b))
}

/// A shape of at most [`MAX_DIMENSIONS`] axes, without allocating.
struct Shape {
    extents: [usize; MAX_DIMENSIONS],
    len: usize,
}

/// `operation` over `result` (C order, of `shape`), from two sources: with AVX2's
/// wider vectors where the processor has them (the same IEEE arithmetic, item by item:
/// nothing is contracted into a fused multiply-add).
fn evaluate<T: Float>(
    operation: Operation,
    result: &mut [T],
    shape: &[usize],
    a: View<'_, T>,
    b: View<'_, T>,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (just checked).
        return unsafe { evaluate_avx2(operation, result, shape, a, b) };
    }
    evaluate_portable(operation, result, shape, a, b);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn evaluate_avx2<T: Float>(
    operation: Operation,
    result: &mut [T],
    shape: &[usize],
    a: View<'_, T>,
    b: View<'_, T>,
) {
    evaluate_portable(operation, result, shape, a, b);
}

#[inline(always)]
fn evaluate_portable<T: Float>(
    operation: Operation,
    result: &mut [T],
    shape: &[usize],
    a: View<'_, T>,
    b: View<'_, T>,
) {
    let (shape, a, b) = coalesce(shape, a, b);
    let shape = &shape.extents[..shape.len];
    // One loop per operation, chosen once: the operation is a constant in each. (The
    // reductions go to `reduce_last`; their arms here only complete the match.)
    macro_rules! each {
        ($($name:ident),*) => {
            match operation {
                $(Operation::$name => rows(result, shape, a, b, |x, y| Operation::$name.apply(x, y)),)*
            }
        };
    }
    each!(
        Add,
        Subtract,
        Multiply,
        Divide,
        Negative,
        Positive,
        Square,
        Sqrt,
        Reciprocal,
        Absolute,
        MaximumLast,
        MinimumLast
    );
}

#[inline(always)]
fn rows<T: Float>(
    result: &mut [T],
    shape: &[usize],
    a: View<'_, T>,
    b: View<'_, T>,
    apply: impl Fn(T, T) -> T,
) {
    let (outer_shape, length) = (&shape[..shape.len() - 1], shape[shape.len() - 1]);
    let mut outer_index = [0usize; MAX_DIMENSIONS];
    let outer = &mut outer_index[..outer_shape.len()];
    for row in result.chunks_exact_mut(length) {
        let (a_row, b_row) = (a.row(outer, length), b.row(outer, length));
        // The common forms get loops of their own, which the compiler vectorises.
        match (&a_row, &b_row) {
            (Row::Contiguous(x), Row::Contiguous(y)) => {
                for ((out, &x), &y) in row.iter_mut().zip(x.iter()).zip(y.iter()) {
                    *out = apply(x, y);
                }
            }
            (Row::Contiguous(x), Row::Scalar(y)) => {
                for (out, &x) in row.iter_mut().zip(x.iter()) {
                    *out = apply(x, *y);
                }
            }
            (Row::Scalar(x), Row::Contiguous(y)) => {
                for (out, &y) in row.iter_mut().zip(y.iter()) {
                    *out = apply(*x, y);
                }
            }
            _ => {
                for (column, out) in row.iter_mut().enumerate() {
                    *out = apply(a_row.at(column), b_row.at(column));
                }
            }
        }
        advance(outer, outer_shape);
    }
}

/// The next multi-index of `shape`, in C order.
fn advance(index: &mut [usize], shape: &[usize]) {
    for (at, &extent) in index.iter_mut().zip(shape).rev() {
        *at += 1;
        if *at < extent {
            break;
        }
        *at = 0;
    }
}

/// `maximum.reduce` or `minimum.reduce` of `source` (of `shape`) over its last axis into
/// `result`, one item per row; false where numpy's answer may differ: a NaN among the
/// items (numpy's loops propagate it), or an extreme of zero (they pick between +0 and -0
/// by the order they visit the items in). Any other extreme is the same bits whichever
/// of its equals is found first.
fn reduce_last<T: Float>(
    operation: Operation,
    result: &mut [T],
    shape: &[usize],
    source: View<'_, T>,
) -> bool {
    let (outer_shape, length) = (&shape[..shape.len() - 1], shape[shape.len() - 1]);
    let mut outer_index = [0usize; MAX_DIMENSIONS];
    let outer = &mut outer_index[..outer_shape.len()];
    for out in result.iter_mut() {
        let row = source.row(outer, length);
        let mut extreme = row.at(0);
        #[allow(clippy::eq_op)] // NaN is the value not equal to itself
        let mut nan = extreme != extreme;
        for column in 1..length {
            let item = row.at(column);
            #[allow(clippy::eq_op)]
            let item_nan = item != item;
            nan |= item_nan;
            extreme = operation.apply(extreme, item);
        }
        if nan || extreme == T::ZERO {
            return false;
        }
        *out = extreme;
        advance(outer, outer_shape);
    }
    true
}

mod fp_flags {
    use std::ffi::{c_int, c_void};

    extern "C" {
        fn framehook_fp_flags_clear();
        fn framehook_fp_flags_reported(written: *const c_void) -> c_int;
    }

    pub fn clear() {
        // SAFETY: standard C's `feclearexcept`, on this thread's flags.
        unsafe { framehook_fp_flags_clear() }
    }

    /// Whether a flag numpy reports was raised since `clear`; `written` is the
    /// memory computed into (see fp_flags.c).
    pub fn reported<T>(written: &[T]) -> bool {
        // SAFETY: standard C's `fetestexcept`; the pointer is only passed on.
        unsafe { framehook_fp_flags_reported(written.as_ptr().cast()) != 0 }
    }
}

/// Runs `program` on `inputs` (one per operand, as the program describes
/// them), writing each returned register into `outputs` (C order, its size).
pub fn run<T: Float>(
    program: &Program,
    inputs: &[Input<'_, T>],
    outputs: &mut [&mut [T]],
) -> Result<(), Unexact> {
    if program.item_size != T::ITEM_SIZE
        || inputs.len() != program.operands.len()
        || outputs.len() != program.outputs
    {
        return Err(Unexact);
    }
    // Scratch registers one after another, in instruction order.
    let mut offsets = Vec::with_capacity(program.registers.len());
    let mut scratch_len = 0;
    for register in &program.registers {
        match register.output {
            Some(position) if outputs[position].len() != register.items() => return Err(Unexact),
            Some(_) => offsets.push(0),
            None => {
                offsets.push(scratch_len);
                scratch_len += register.items();
            }
        }
    }
    let mut scratch = vec![T::ZERO; scratch_len];
    fp_flags::clear();
    for (index, instruction) in program.instructions.iter().enumerate() {
        let register = &program.registers[index];
        // Registers are written in order: every source register lies before
        // this one, in the scratch before its offset or in an earlier output.
        let (scratch_before, scratch_rest) = scratch.split_at_mut(if register.output.is_some() {
            scratch_len
        } else {
            offsets[index]
        });
        let (outputs_before, outputs_rest) = outputs.split_at_mut(register.output.unwrap_or(program.outputs));
        // A reduction reads its source as it is; any other instruction broadcasts its
        // sources to its result.
        let reduction = instruction.operation.reduction();
        let view = |source: Source| -> Result<View<'_, T>, Unexact> {
            Ok(match source {
                Source::Constant(at) => View::Scalar(T::from_f64(program.constants[at])),
                Source::Operand(at) => match (&inputs[at], &program.operands[at]) {
                    (Input::Number(value), OperandSpec::Number) => View::Scalar(T::from_f64(*value)),
                    (
                        Input::Array {
                            items,
                            origin,
                            strides,
                        },
                        OperandSpec::Array(shape),
                    ) => {
                        let target = if reduction { shape } else { &register.shape };
                        View::strided(items, *origin, shape, &strides[..shape.len()], target)
                    }
                    _ => return Err(Unexact),
                },
                Source::Register(at) => {
                    let source = &program.registers[at];
                    let items: &[T] = match source.output {
                        Some(position) => &outputs_before[position][..],
                        None => &scratch_before[offsets[at]..offsets[at] + source.items()],
                    };
                    View::dense(
                        items,
                        &source.shape,
                        if reduction { &source.shape } else { &register.shape },
                    )
                }
            })
        };
        let (a, b) = (view(instruction.sources[0])?, view(instruction.sources[1])?);
        let result: &mut [T] = match register.output {
            Some(_) => &mut outputs_rest[0][..],
            None => &mut scratch_rest[..register.items()],
        };
        if reduction {
            let reduced = match instruction.sources[0] {
                Source::Operand(at) => match &program.operands[at] {
                    OperandSpec::Array(shape) => shape,
                    OperandSpec::Number => return Err(Unexact),
                },
                Source::Register(at) => &program.registers[at].shape,
                Source::Constant(_) => return Err(Unexact),
            };
            if !reduce_last(instruction.operation, result, reduced, a) {
                return Err(Unexact);
            }
        } else {
            evaluate(instruction.operation, result, &register.shape, a, b);
        }
    }
    if fp_flags::reported(&scratch) {
        return Err(Unexact);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|word| word.to_le_bytes()).collect()
    }

    fn strides(given: &[isize]) -> [isize; MAX_DIMENSIONS] {
        let mut strides = [0; MAX_DIMENSIONS];
        strides[..given.len()].copy_from_slice(given);
        strides
    }

    const REGISTER: u32 = 1 << SOURCE_TAG_SHIFT;
    const CONSTANT: u32 = 2 << SOURCE_TAG_SHIFT;

    /// `(x + row) * 2`, then `sqrt` of it, both returned: x is 2x3, row is 3.
    fn program() -> Program {
        let two = 2.0f64.to_bits();
        Program::decode(&words(&[
            4, // float32
            2,
            1,
            2,
            2,
            3,
            1,
            1,
            3, // operands: x (2x3), row (3)
            1,
            two as u32,
            (two >> 32) as u32, // constants: 2.0
            3,                  // instructions
            0,
            0,
            1,
            2,
            2,
            3,
            0, // r0 = x + row
            2,
            REGISTER,
            CONSTANT,
            2,
            2,
            3,
            1, // r1 = r0 * 2 (result 0)
            7,
            REGISTER | 1,
            NO_SOURCE,
            2,
            2,
            3,
            2, // r2 = sqrt(r1) (result 1)
        ]))
        .unwrap()
    }

    #[test]
    fn a_program_runs_with_broadcasting_and_strides() {
        let program = program();
        // x's columns reversed: strides (3, -1) from the last item of each row.
        let x = [3.0f32, 2.0, 1.0, 6.0, 5.0, 4.0];
        let row = [10.0f32, 20.0, 30.0];
        let inputs = [
            Input::Array {
                items: &x[..],
                origin: 2,
                strides: strides(&[3, -1]),
            },
            Input::Array {
                items: &row[..],
                origin: 0,
                strides: strides(&[1]),
            },
        ];
        let (mut first, mut second) = ([0.0f32; 6], [0.0f32; 6]);
        run(&program, &inputs, &mut [&mut first[..], &mut second[..]]).unwrap();
        assert_eq!(first, [22.0, 44.0, 66.0, 28.0, 50.0, 72.0]);
        let expected: Vec<f32> = first.iter().map(|v| v.sqrt()).collect();
        assert_eq!(second.to_vec(), expected);
    }

    #[test]
    fn a_flag_numpy_reports_gives_up_and_a_quiet_nan_does_not() {
        let program = program();
        let row = [0.0f32; 3];
        // sqrt of a negative is invalid; 2e38 * 2 overflows; NaN and infinity pass through
        // the arithmetic quietly, as in numpy's loops.
        for (bad, gives_up) in [
            (-1.0e30, true),
            (2.0e38, true),
            (f32::NAN, false),
            (f32::INFINITY, false),
        ] {
            let x = [1.0f32, 1.0, 1.0, 1.0, 1.0, bad];
            let inputs = [
                Input::Array {
                    items: &x[..],
                    origin: 0,
                    strides: strides(&[3, 1]),
                },
                Input::Array {
                    items: &row[..],
                    origin: 0,
                    strides: strides(&[1]),
                },
            ];
            let (mut first, mut second) = ([0.0f32; 6], [0.0f32; 6]);
            let ran = run(&program, &inputs, &mut [&mut first[..], &mut second[..]]);
            assert_eq!(ran.is_err(), gives_up, "{bad}");
        }
    }

    #[test]
    fn underflow_gives_up_where_a_sum_does_not() {
        // r0 = x * x, returned: x = [MIN_POSITIVE] underflows; r0 = x - y does not.
        for (operation, gives_up) in [(2, true), (1, false)] {
            let program =
                Program::decode(&words(&[4, 2, 1, 1, 1, 1, 1, 1, 0, 1, operation, 0, 1, 1, 1, 1])).unwrap();
            let (x, y) = ([f32::MIN_POSITIVE], [f32::MIN_POSITIVE * 1.5]);
            let inputs = [
                Input::Array {
                    items: &x[..],
                    origin: 0,
                    strides: strides(&[1]),
                },
                Input::Array {
                    items: &y[..],
                    origin: 0,
                    strides: strides(&[1]),
                },
            ];
            let mut result = [0.0f32];
            let ran = run(&program, &inputs, &mut [&mut result[..]]);
            assert_eq!(ran.is_err(), gives_up, "operation {operation}: {result:?}");
        }
    }

    #[test]
    fn a_reduction_over_the_last_axis_gives_up_on_nan_and_zero_extremes() {
        // r0 = maximum.reduce(x, -1, keepdims) of a 2x3 x; r1 = x - r0.
        let program = Program::decode(&words(&[
            8, 1, 1, 2, 2, 3, 0, 2, //
            10, 0, NO_SOURCE, 2, 2, 1, 1, //
            1, 0, REGISTER, 2, 2, 3, 2,
        ]))
        .unwrap();
        let cases: [([f64; 6], Option<[f64; 2]>); 4] = [
            ([1.0, 5.0, -2.0, -7.0, -3.0, -4.0], Some([5.0, -3.0])),
            ([1.0, f64::NAN, 2.0, 1.0, 1.0, 1.0], None),
            ([-1.0, 0.0, -0.0, 1.0, 2.0, 3.0], None),
            (
                [-1.0, -2.0, -3.0, f64::INFINITY, 2.0, 3.0],
                Some([-1.0, f64::INFINITY]),
            ),
        ];
        for (x, expected) in cases {
            let inputs = [Input::Array {
                items: &x[..],
                origin: 0,
                strides: strides(&[3, 1]),
            }];
            let (mut extremes, mut centered) = ([0.0; 2], [0.0; 6]);
            let ran = run(&program, &inputs, &mut [&mut extremes[..], &mut centered[..]]);
            match expected {
                Some(expected) if expected[1].is_finite() => {
                    assert_eq!(ran, Ok(()));
                    assert_eq!(extremes, expected);
                    assert_eq!(
                        centered[..3],
                        [x[0] - expected[0], x[1] - expected[0], x[2] - expected[0]]
                    );
                }
                // inf - inf is invalid: the flags give up where the reduction did not.
                Some(_) => assert_eq!(ran, Err(Unexact)),
                None => assert_eq!(ran, Err(Unexact), "{x:?}"),
            }
        }
        let reduces_wrong = words(&[8, 1, 1, 2, 2, 3, 0, 1, 10, 0, NO_SOURCE, 2, 2, 3, 1]);
        assert!(Program::decode(&reduces_wrong)
            .unwrap_err()
            .contains("does not reduce"));
    }

    #[test]
    fn malformed_programs_are_refused() {
        let good = words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, NO_SOURCE, 1, 4, 1]);
        assert!(Program::decode(&good).is_ok());
        for (bad, reason) in [
            (words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, NO_SOURCE, 1, 4]), "ends early"),
            (words(&[5, 0, 0, 0]), "item size"),
            (words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, 7, 1, 4, 1]), "unary"),
            (
                words(&[8, 1, 1, 1, 4, 0, 1, 0, REGISTER, NO_SOURCE, 1, 4, 1]),
                "before it",
            ),
            (words(&[8, 1, 1, 1, 4, 0, 1, 0, 0, 0, 1, 5, 1]), "broadcast"),
            (
                words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, NO_SOURCE, 1, 4, 2]),
                "result 2",
            ),
            (
                words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, NO_SOURCE, 1, 4, 0]),
                "returns nothing",
            ),
            (words(&[8, 1, 1, 1, 4, 0, 1, 4, 0, NO_SOURCE, 1, 0, 1]), "0-d"),
            (words(&[8, 1, 1, 2, 1 << 16, 1 << 16, 0, 0]), "items"),
        ] {
            let error = Program::decode(&bad).unwrap_err();
            assert!(error.contains(reason), "{error} lacks {reason}");
        }
    }
}
