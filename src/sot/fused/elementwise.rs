//! The kernels' loops over items: elementwise operations with broadcasting and
//! strides, reductions over the last axis, picks of the larger or smaller item.

use std::cell::Cell;

use super::{Float, Operation, MAX_DIMENSIONS};

/// A source of one instruction, its strides aligned to the result's dimensions
/// (0 where it broadcasts).
#[derive(Clone, Copy)]
pub(super) enum View<'a, T> {
    Scalar(T),
    Strided {
        items: &'a [T],
        origin: isize,
        strides: [isize; MAX_DIMENSIONS],
    },
}

impl<'a, T: Float> View<'a, T> {
    pub(super) fn strided(
        items: &'a [T],
        origin: usize,
        shape: &[usize],
        strides: &[isize],
        target: &[usize],
    ) -> Self {
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
    pub(super) fn dense(items: &'a [T], shape: &[usize], target: &[usize]) -> Self {
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
pub(super) fn evaluate<T: Float>(
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
    // reductions go to `reduce_last`, the picks to `extremes` and the products to the
    // caller's `Products`: their arms here only complete the match.)
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
        MinimumLast,
        Maximum,
        Minimum,
        MatrixProduct
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
pub(super) fn reduce_last<T: Float>(
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

/// `operation` (maximum or minimum) over `result`, as `evaluate`; false where
/// numpy's loops may pick the other item: a NaN (which of two NaNs, by the
/// path the loop takes), or +0 beside -0 (scalar and vector loops choose
/// differently). Any other pair has one answer.
pub(super) fn extremes<T: Float>(
    operation: Operation,
    result: &mut [T],
    shape: &[usize],
    a: View<'_, T>,
    b: View<'_, T>,
) -> bool {
    let ambiguous = Cell::new(false);
    let (shape, a, b) = coalesce(shape, a, b);
    rows(result, &shape.extents[..shape.len], a, b, |x, y| {
        #[allow(clippy::eq_op)] // NaN is the value not equal to itself
        let unordered = x != x || y != y;
        if unordered || x == y && x.is_sign_negative() != y.is_sign_negative() {
            ambiguous.set(true);
        }
        operation.apply(x, y)
    });
    !ambiguous.get()
}
