//! Fused kernels for SOT's numpy backend: a run of a graph's elementwise
//! operations and matrix products on float32 or float64 arrays evaluated in one
//! call, where numpy makes one ufunc call (and one new array) per operation,
//! which on small arrays costs far more than the arithmetic.
//!
//! Results are numpy's bit for bit. The elementwise operations fused are those
//! IEEE 754 rounds exactly (add, subtract, multiply, divide, square root and the
//! sign and square forms of those) and the choices of maximum and minimum, each
//! computed in the arrays' own type as numpy's loops compute them. A matrix
//! product is not computed here: the caller's [`Products`] runs numpy's own
//! matmul loop on the kernel's memory, so its summation order is numpy's (its
//! BLAS's) whatever the build. Where the arithmetic sets a floating-point flag
//! numpy reports (invalid, divide by zero, overflow, underflow: the hardware's
//! own flags, read as numpy reads them after each loop), the kernel gives up
//! ([`Unexact`]) before its caller sees any result, and the caller runs the
//! operations through numpy, which warns or raises as it always does.
//!
//! No Python here: a program is decoded from words the backend writes, and run
//! on slices (`elementwise.rs` the loops); `python.rs` binds it to numpy's
//! arrays and its matmul loop.

mod elementwise;
pub mod python;
#[cfg(test)]
mod tests;

use elementwise::{evaluate, extremes, reduce_last, View};

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
    fn is_sign_negative(self) -> bool;
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
            fn is_sign_negative(self) -> bool {
                <$type>::is_sign_negative(self)
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
    /// The larger of two items (the kernel gives up where numpy's loops may pick
    /// differently: a NaN, or +0 beside -0).
    Maximum,
    /// The smaller of two items (likewise).
    Minimum,
    /// `matmul` of two matrices, `(m, n) @ (n, p)`: computed by the caller's
    /// [`Products`].
    MatrixProduct,
}

/// The operations in the order of their codes in a program.
const OPERATIONS: [Operation; 15] = [
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
    Operation::Maximum,
    Operation::Minimum,
    Operation::MatrixProduct,
];

impl Operation {
    fn binary(self) -> bool {
        matches!(
            self,
            Self::Add
                | Self::Subtract
                | Self::Multiply
                | Self::Divide
                | Self::Maximum
                | Self::Minimum
                | Self::MatrixProduct
        )
    }

    /// Whether the operation picks one of its two items, where the kernel must
    /// check that numpy's loops could not pick the other.
    fn extreme(self) -> bool {
        matches!(self, Self::Maximum | Self::Minimum)
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
            // The reductions' step (see `reduce_last`), and the pick of two items
            // where it is unambiguous (see `extremes`).
            Self::MaximumLast | Self::Maximum => {
                if b > a {
                    b
                } else {
                    a
                }
            }
            Self::MinimumLast | Self::Minimum => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            // Never applied item by item (see `run`).
            Self::MatrixProduct => a,
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
    /// Per operand, whether an elementwise instruction or reduction reads it (not
    /// only products).
    read_elementwise: Vec<bool>,
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
            // A product's matrices: (m, n) then (n, p), for a result of (m, p).
            let mut factors: [Option<Vec<usize>>; 2] = [None, None];
            for (slot, word) in [first, second].into_iter().enumerate() {
                if slot >= arity {
                    if word != NO_SOURCE {
                        return Err(format!("instruction {index} is unary but names a second source"));
                    }
                    continue;
                }
                let (source, source_shape) = decode_source(word)?;
                if operation == Operation::MatrixProduct {
                    factors[slot] = source_shape.map(<[usize]>::to_vec);
                } else if operation.reduction() {
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
            if operation == Operation::MatrixProduct {
                let multiplies = match (&factors[0], &factors[1], &shape[..]) {
                    (Some(a), Some(b), &[m, p]) => {
                        a.len() == 2 && b.len() == 2 && a[0] == m && b[1] == p && a[1] == b[0]
                    }
                    _ => false,
                };
                if !multiplies {
                    return Err(format!(
                        "instruction {index} multiplies sources that are not an (m, n) and an (n, p) matrix for {shape:?}"
                    ));
                }
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
        let mut read_elementwise = vec![false; operands.len()];
        for instruction in instructions
            .iter()
            .filter(|i| i.operation != Operation::MatrixProduct)
        {
            for source in instruction.sources {
                if let Source::Operand(at) = source {
                    read_elementwise[at] = true;
                }
            }
        }
        Ok(Self {
            item_size,
            operands,
            constants,
            registers,
            instructions,
            outputs,
            read_elementwise,
        })
    }

    /// How many arrays the caller gets back.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Whether an elementwise instruction or a reduction reads operand `at`:
    /// numpy orders such a result's axes by its operands' strides, where a
    /// product's result is in C order whatever its operands' are.
    pub fn read_elementwise(&self, at: usize) -> bool {
        self.read_elementwise[at]
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

/// A matrix a product reads: its item `(i, j)` is
/// `items[origin + i * strides[0] + j * strides[1]]` (strides in items: an
/// operand's own, a register's those of a new C-order array).
pub struct Matrix<'a, T> {
    pub items: &'a [T],
    pub origin: usize,
    pub shape: [usize; 2],
    pub strides: [isize; 2],
}

impl<'a, T> Matrix<'a, T> {
    fn dense(items: &'a [T], shape: &[usize]) -> Self {
        Self {
            items,
            origin: 0,
            shape: [shape[0], shape[1]],
            strides: [shape[1] as isize, 1],
        }
    }
}

/// What computes a program's matrix products: numpy's own loop, where the
/// kernel runs on numpy's arrays.
pub trait Products<T> {
    /// `a @ b` into `result` (C order, `a.shape[0]` rows of `b.shape[1]`), as
    /// numpy computes it; `Unexact` where it cannot.
    fn multiply(&mut self, a: Matrix<'_, T>, b: Matrix<'_, T>, result: &mut [T]) -> Result<(), Unexact>;
}

/// Runs `program` on `inputs` (one per operand, as the program describes
/// them), writing each returned register into `outputs` (C order, its size);
/// `products` computes its matrix products.
pub fn run<T: Float>(
    program: &Program,
    inputs: &[Input<'_, T>],
    outputs: &mut [&mut [T]],
    products: &mut dyn Products<T>,
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
        let register_items = |at: usize| -> &[T] {
            let source = &program.registers[at];
            match source.output {
                Some(position) => &outputs_before[position][..],
                None => &scratch_before[offsets[at]..offsets[at] + source.items()],
            }
        };
        if instruction.operation == Operation::MatrixProduct {
            let matrix = |source: Source| -> Result<Matrix<'_, T>, Unexact> {
                match source {
                    Source::Operand(at) => match (&inputs[at], &program.operands[at]) {
                        (
                            Input::Array {
                                items,
                                origin,
                                strides,
                            },
                            OperandSpec::Array(shape),
                        ) => Ok(Matrix {
                            items,
                            origin: *origin,
                            shape: [shape[0], shape[1]],
                            strides: [strides[0], strides[1]],
                        }),
                        _ => Err(Unexact),
                    },
                    Source::Register(at) => {
                        Ok(Matrix::dense(register_items(at), &program.registers[at].shape))
                    }
                    Source::Constant(_) => Err(Unexact),
                }
            };
            let (a, b) = (matrix(instruction.sources[0])?, matrix(instruction.sources[1])?);
            // numpy's loop starts from clear flags, and may clear them itself (after
            // a BLAS that raises them spuriously): what ran before it is judged first.
            if fp_flags::reported(scratch_before) {
                return Err(Unexact);
            }
            let result: &mut [T] = match register.output {
                Some(_) => &mut outputs_rest[0][..],
                None => &mut scratch_rest[..register.items()],
            };
            products.multiply(a, b, result)?;
            continue;
        }
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
                    View::dense(
                        register_items(at),
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
        } else if instruction.operation.extreme() {
            if !extremes(instruction.operation, result, &register.shape, a, b) {
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
