//! The fused kernels' programs, decoded and run on slices (no Python).

use super::*;

/// Products by the textbook loop, in the order of `k`.
struct Naive;

impl<T: Float> Products<T> for Naive {
    fn multiply(&mut self, a: Matrix<'_, T>, b: Matrix<'_, T>, result: &mut [T]) -> Result<(), Unexact> {
        let at = |m: &Matrix<'_, T>, i: usize, j: usize| {
            m.items[(m.origin as isize + i as isize * m.strides[0] + j as isize * m.strides[1]) as usize]
        };
        let (rows, inner, columns) = (a.shape[0], a.shape[1], b.shape[1]);
        for i in 0..rows {
            for j in 0..columns {
                let mut sum = T::ZERO;
                for k in 0..inner {
                    sum = sum + at(&a, i, k) * at(&b, k, j);
                }
                result[i * columns + j] = sum;
            }
        }
        Ok(())
    }
}

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
    run(
        &program,
        &inputs,
        &mut [&mut first[..], &mut second[..]],
        &mut Naive,
    )
    .unwrap();
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
        let ran = run(
            &program,
            &inputs,
            &mut [&mut first[..], &mut second[..]],
            &mut Naive,
        );
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
        let ran = run(&program, &inputs, &mut [&mut result[..]], &mut Naive);
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
        let ran = run(
            &program,
            &inputs,
            &mut [&mut extremes[..], &mut centered[..]],
            &mut Naive,
        );
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

/// `maximum(x @ w + b, 0)` returned, then `x @ w` again beside it: x is 2x3, w 3x2
/// (read through a transposed 2x3's strides), b 2.
fn dense_layer() -> Program {
    Program::decode(&words(&[
        8, //
        3,
        1,
        2,
        2,
        3,
        1,
        2,
        3,
        2,
        1,
        1,
        2, // operands: x, w, b
        1,
        0,
        0, // constants: 0.0
        4, //
        14,
        0,
        1,
        2,
        2,
        2,
        0, // r0 = x @ w
        0,
        REGISTER,
        2,
        2,
        2,
        2,
        0, // r1 = r0 + b
        12,
        REGISTER | 1,
        CONSTANT,
        2,
        2,
        2,
        1, // r2 = maximum(r1, 0.0) (result 0)
        14,
        0,
        1,
        2,
        2,
        2,
        2, // r3 = x @ w (result 1)
    ]))
    .unwrap()
}

#[test]
fn a_product_feeds_the_elementwise_instructions_after_it() {
    let program = dense_layer();
    let x = [1.0, 2.0, 3.0, -4.0, 5.0, -6.0];
    // w = [[1, 2], [3, 4], [5, 6]], stored as its transpose.
    let w_transposed = [1.0, 3.0, 5.0, 2.0, 4.0, 6.0];
    let b = [0.5, -100.0];
    let inputs = [
        Input::Array {
            items: &x[..],
            origin: 0,
            strides: strides(&[3, 1]),
        },
        Input::Array {
            items: &w_transposed[..],
            origin: 0,
            strides: strides(&[1, 3]),
        },
        Input::Array {
            items: &b[..],
            origin: 0,
            strides: strides(&[1]),
        },
    ];
    let (mut activated, mut product) = ([0.0; 4], [0.0; 4]);
    run(
        &program,
        &inputs,
        &mut [&mut activated[..], &mut product[..]],
        &mut Naive,
    )
    .unwrap();
    assert_eq!(product, [22.0, 28.0, -19.0, -24.0]);
    assert_eq!(activated, [22.5, 0.0, 0.0, 0.0]);
}

#[test]
fn a_pick_gives_up_where_numpy_could_pick_the_other_item() {
    // r0 = maximum(x, y), r1 = minimum(x, y), both returned, on 4 items.
    let program = Program::decode(&words(&[
        8, 2, 1, 1, 4, 1, 1, 4, 0, 2, //
        12, 0, 1, 1, 4, 1, //
        13, 0, 1, 1, 4, 2,
    ]))
    .unwrap();
    let cases: [([f64; 4], [f64; 4], bool); 4] = [
        ([1.0, -2.0, 0.0, 7.0], [0.5, 3.0, 0.0, -7.0], true),
        ([1.0, -2.0, 0.0, f64::INFINITY], [0.5, 3.0, 0.0, 1.0], true),
        ([1.0, f64::NAN, 0.0, 7.0], [0.5, 3.0, 0.0, -7.0], false),
        ([1.0, -2.0, -0.0, 7.0], [0.5, 3.0, 0.0, -7.0], false),
    ];
    for (x, y, exact) in cases {
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
        let (mut larger, mut smaller) = ([0.0; 4], [0.0; 4]);
        let ran = run(
            &program,
            &inputs,
            &mut [&mut larger[..], &mut smaller[..]],
            &mut Naive,
        );
        assert_eq!(ran.is_ok(), exact, "{x:?} {y:?}");
        if exact {
            for i in 0..4 {
                assert_eq!(larger[i].to_bits(), x[i].max(y[i]).to_bits());
                assert_eq!(smaller[i].to_bits(), x[i].min(y[i]).to_bits());
            }
        }
    }
}

/// Products as numpy's loop computes them after a BLAS that raises flags spuriously:
/// the flags cleared after the product.
struct Clearing;

impl<T: Float> Products<T> for Clearing {
    fn multiply(&mut self, a: Matrix<'_, T>, b: Matrix<'_, T>, result: &mut [T]) -> Result<(), Unexact> {
        Naive.multiply(a, b, result)?;
        fp_flags::clear();
        Ok(())
    }
}

#[test]
fn a_flag_raised_before_a_product_is_seen_though_the_product_clears_the_flags() {
    // r0 = x * x (overflows for 1e200), r1 = r0 @ w: both returned.
    let program = Program::decode(&words(&[
        8, 2, 1, 2, 1, 1, 1, 2, 1, 1, 0, 2, //
        2, 0, 0, 2, 1, 1, 1, //
        14, REGISTER, 1, 2, 1, 1, 2,
    ]))
    .unwrap();
    for (value, exact) in [(3.0, true), (1e200, false)] {
        let (x, w) = ([value], [2.0]);
        let inputs = [
            Input::Array {
                items: &x[..],
                origin: 0,
                strides: strides(&[1, 1]),
            },
            Input::Array {
                items: &w[..],
                origin: 0,
                strides: strides(&[1, 1]),
            },
        ];
        let (mut square, mut product) = ([0.0], [0.0]);
        let ran = run(
            &program,
            &inputs,
            &mut [&mut square[..], &mut product[..]],
            &mut Clearing,
        );
        assert_eq!(ran.is_ok(), exact, "{value}");
        if exact {
            assert_eq!(product, [18.0]);
        }
    }
}

#[test]
fn a_product_of_matrices_that_do_not_multiply_is_refused() {
    // x is 2x3; x @ x is not a product.
    let bad = words(&[8, 1, 1, 2, 2, 3, 0, 1, 14, 0, 0, 2, 2, 3, 1]);
    assert!(Program::decode(&bad).unwrap_err().contains("multiplies"));
    // Nor is a product of a number.
    let number = words(&[8, 2, 1, 2, 2, 3, 0, 0, 1, 14, 0, 1, 2, 2, 3, 1]);
    assert!(Program::decode(&number).unwrap_err().contains("multiplies"));
}
