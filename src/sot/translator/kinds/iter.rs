//! Iterators of the translation: over known values, lazy builtins (`range`, `zip`,
//! `enumerate`, `map`, `filter`), and generators the translated code made. Each is true,
//! hashable, and yields what it has left.
//!
//! Models: `type` of a generator and of the lazy builtins, `next` (pulling the iterators
//! they wrap as CPython's `zip`, `enumerate`, `map` and `filter` do), `iter()` of an iterator
//! (itself), a generator's `send`. An iterator over known values is rebuilt as an iterator
//! over the items it has left; a generator suspended at a `yield` as a generator of its code
//! entered there (`Rebuild::suspended_generator`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::{drain, Interp, Kind, Rebuild, Res, Sym, Val, Vid};
use crate::hookapi::pyobject::import;
use crate::sot::translator::model::problem::Problem;
use crate::sot::translator::model::value::Lazy;
use crate::sot::translator::pyutil::builtin;

pub struct Iterators;

impl Kind for Iterators {
    fn python_type<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        _v: Vid,
        val: &Val<'py>,
    ) -> Res<Option<Bound<'py, PyAny>>> {
        let py = cx.py();
        Ok(Some(match val {
            Val::Generator(_) => import(py, "types")?.getattr("GeneratorType")?,
            Val::Lazy(lazy) => match lazy {
                Lazy::Range { .. } => builtin(py, "iter")?
                    .call1((builtin(py, "range")?.call1((0,))?,))?
                    .get_type()
                    .into_any(),
                Lazy::Zip(_) => builtin(py, "zip")?,
                Lazy::Enumerate { .. } => builtin(py, "enumerate")?,
                Lazy::Map { .. } => builtin(py, "map")?,
                Lazy::Filter { .. } => builtin(py, "filter")?,
                Lazy::DropWhile { .. } => import(py, "itertools")?.getattr("dropwhile")?,
                Lazy::TakeWhile { .. } => import(py, "itertools")?.getattr("takewhile")?,
                Lazy::ISlice { .. } => import(py, "itertools")?.getattr("islice")?,
            },
            _ => return Ok(None),
        }))
    }

    fn truth<'py>(&self, _cx: &mut dyn Interp<'py>, _v: Vid, _val: &Val<'py>) -> Res<Option<bool>> {
        Ok(Some(true))
    }

    /// An iterator is its own.
    fn iter<'py>(&self, _cx: &mut dyn Interp<'py>, v: Vid, _val: &Val<'py>) -> Res<Option<Vid>> {
        Ok(Some(v))
    }

    fn next<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>) -> Res<Option<Option<Vid>>> {
        match val {
            Val::Iter {
                items,
                next,
                of_tuple,
            } => {
                let Some(item) = items.get(*next).copied() else {
                    return Ok(Some(None));
                };
                cx.set_val(
                    v,
                    Val::Iter {
                        items: items.clone(),
                        next: next + 1,
                        of_tuple: *of_tuple,
                    },
                );
                Ok(Some(Some(item)))
            }
            Val::Lazy(lazy) => lazy_next(cx, v, lazy).map(Some),
            _ => cx.resume_generator(v).map(Some),
        }
    }

    /// `generator.send(value)`: the value the suspended `yield` evaluates to.
    fn method<'py>(
        &self,
        cx: &mut dyn Interp<'py>,
        v: Vid,
        val: &Val<'py>,
        name: &str,
        args: &[Vid],
        _kwargs: &[(String, Vid)],
    ) -> Res<Option<Vid>> {
        let (Val::Generator(state), "send", [sent]) = (val, name, args) else {
            return Ok(None);
        };
        let suspended = state.borrow().suspended;
        if suspended {
            // What the suspended yield evaluates to (it left None on the stack).
            if let Some(top) = state.borrow_mut().frame.stack.last_mut() {
                *top = *sent;
            }
        } else if !cx.concrete(*sent)?.is_none() && !state.borrow().finished {
            return Err(Problem::Python(PyTypeError::new_err(
                "can't send non-None value to a just-started generator",
            )));
        }
        match cx.advance(v)? {
            Some(item) => Ok(Some(item)),
            None => Err(cx.exhausted(v)),
        }
    }

    fn attr<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, val: &Val<'py>, name: &str) -> Res<Option<Vid>> {
        Ok(match (val, name) {
            (Val::Generator(_), "send") => Some(cx.push_val(Val::ContainerMethod {
                container: v,
                name: name.to_owned(),
            })),
            _ => None,
        })
    }

    /// An iterator over known values: `iter()` of the items it has left; a range's: `iter()`
    /// of the rest of the range.
    fn rebuild<'py>(&self, r: &mut dyn Rebuild<'py>, _v: Vid, val: &Val<'py>) -> PyResult<bool> {
        match val {
            Val::Generator(state) => return r.suspended_generator(&state.borrow()),
            Val::Lazy(
                lazy @ (Lazy::Zip(_)
                | Lazy::Enumerate { .. }
                | Lazy::Map { .. }
                | Lazy::Filter { .. }
                | Lazy::ISlice { .. }),
            ) => return rebuild_lazy(r, lazy).map(|()| true),
            Val::Iter { .. } | Val::Lazy(Lazy::Range { .. }) => {}
            _ => return Ok(false),
        }
        let iter = builtin(r.py(), "iter")?;
        match val {
            Val::Iter { of_tuple: false, .. } => return Ok(false),
            Val::Iter { items, next, .. } => {
                let rest = items[*next..].to_vec();
                r.call_constant(iter, &mut |r| {
                    for item in &rest {
                        r.value(*item)?;
                    }
                    r.build_tuple(rest.len());
                    Ok(1)
                })?;
            }
            Val::Lazy(Lazy::Range { next, stop, step }) => {
                let range = builtin(r.py(), "range")?.call1((*next, *stop, *step))?;
                r.call_constant(iter, &mut |r| {
                    r.load_const(range.clone());
                    Ok(1)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A generator is compared by its position instead (`Vm::generator_positions`).
    fn unchanged<'py>(&self, old: &Val<'py>, new: &Val<'py>, _moved: &dyn Fn(Sym) -> Sym) -> bool {
        match (old, new) {
            (
                Val::Iter {
                    items: a, next: m, ..
                },
                Val::Iter {
                    items: b, next: n, ..
                },
            ) => a == b && m == n,
            (Val::Lazy(a), Val::Lazy(b)) => a == b,
            _ => std::mem::discriminant(old) == std::mem::discriminant(new),
        }
    }

    fn items<'py>(&self, cx: &mut dyn Interp<'py>, v: Vid, _val: &Val<'py>) -> Res<Option<Vec<Vid>>> {
        drain(cx, v).map(Some)
    }

    /// A suspended generator holds its frame's variables and stack.
    fn children(&self, val: &Val<'_>, _cells: &[Option<Vid>], out: &mut Vec<Vid>) {
        match val {
            Val::Iter { items, next, .. } => out.extend(&items[*next..]),
            Val::Lazy(Lazy::Zip(iterators)) => out.extend(iterators),
            Val::Lazy(Lazy::Enumerate { iterator, .. }) => out.push(*iterator),
            Val::Lazy(Lazy::ISlice {
                iterator,
                done: false,
                ..
            }) => out.push(*iterator),
            Val::Lazy(Lazy::Map { function, iterators }) => {
                out.push(*function);
                out.extend(iterators);
            }
            Val::Lazy(Lazy::Filter { function, iterator }) => out.extend(function.iter().chain([iterator])),
            Val::Generator(state) => {
                let state = state.borrow();
                if state.suspended && !state.finished {
                    out.extend(state.frame.locals.iter().chain(&state.frame.stack));
                }
            }
            _ => {}
        }
    }
}

/// `zip`, `enumerate`, `map` or `filter` of the iterators (and function) `lazy` holds, each
/// rebuilt where it is now: the same iterator as the rest of the translation's; an `islice`
/// with its bounds counted from where it is (one that ended, of no items).
fn rebuild_lazy<'py>(r: &mut dyn Rebuild<'py>, lazy: &Lazy) -> PyResult<()> {
    let py = r.py();
    if let Lazy::ISlice {
        iterator,
        count,
        next,
        stop,
        step,
        done,
    } = *lazy
    {
        let islice = import(py, "itertools")?.getattr("islice")?;
        return r.call_constant(islice, &mut |r| {
            if done {
                r.build_tuple(0);
                r.load_const(0_i64.into_pyobject(py)?.into_any());
                return Ok(2);
            }
            r.value(iterator)?;
            let bounds = [Some(next - count), stop.map(|stop| stop - count), Some(step)];
            for bound in bounds {
                match bound {
                    Some(bound) => r.load_const(bound.into_pyobject(py)?.into_any()),
                    None => r.load_const(py.None().into_bound(py)),
                }
            }
            Ok(4)
        });
    }
    let (maker, function, iterators, start): (&str, Option<Option<Vid>>, Vec<Vid>, Option<i64>) = match lazy {
        Lazy::Zip(iterators) => ("zip", None, iterators.clone(), None),
        Lazy::Enumerate { iterator, count } => ("enumerate", None, vec![*iterator], Some(*count)),
        Lazy::Map { function, iterators } => ("map", Some(Some(*function)), iterators.clone(), None),
        Lazy::Filter { function, iterator } => ("filter", Some(*function), vec![*iterator], None),
        _ => unreachable!("rebuild takes the other iterators"),
    };
    r.call_constant(builtin(py, maker)?, &mut |r| {
        match function {
            Some(Some(function)) => r.value(function)?,
            Some(None) => r.load_const(py.None().into_bound(py)),
            None => {}
        }
        for iterator in &iterators {
            r.value(*iterator)?;
        }
        if let Some(start) = start {
            r.load_const(start.into_pyobject(py)?.into_any());
        }
        Ok(usize::from(function.is_some()) + iterators.len() + usize::from(start.is_some()))
    })
}

/// The next item of a lazy builtin iterator `it`, pulling its iterators as CPython's
/// `zip`, `enumerate`, `map`, `filter` and `itertools`' `dropwhile` and `takewhile` do.
fn lazy_next<'py>(cx: &mut dyn Interp<'py>, it: Vid, lazy: &Lazy) -> Res<Option<Vid>> {
    match lazy.clone() {
        Lazy::Zip(iterators) => {
            let mut items = Vec::with_capacity(iterators.len());
            for iterator in &iterators {
                match cx.advance(*iterator)? {
                    Some(item) => items.push(item),
                    None => return Ok(None),
                }
            }
            Ok((!iterators.is_empty()).then(|| cx.push_val(Val::Tuple(items))))
        }
        Lazy::Range { next, stop, step } => {
            if (step > 0 && next >= stop) || (step < 0 && next <= stop) {
                return Ok(None);
            }
            // Past i64 the iterator is exhausted (its stop fits in i64).
            let after = next.checked_add(step).unwrap_or(stop);
            cx.set_val(
                it,
                Val::Lazy(Lazy::Range {
                    next: after,
                    stop,
                    step,
                }),
            );
            Ok(Some(cx.constant(next.into_pyobject(cx.py())?.into_any())))
        }
        Lazy::Enumerate { iterator, count } => {
            let Some(item) = cx.advance(iterator)? else {
                return Ok(None);
            };
            cx.set_val(
                it,
                Val::Lazy(Lazy::Enumerate {
                    iterator,
                    count: count + 1,
                }),
            );
            let index = cx.constant(count.into_pyobject(cx.py())?.into_any());
            Ok(Some(cx.push_val(Val::Tuple(vec![index, item]))))
        }
        Lazy::Map { function, iterators } => {
            let mut items = Vec::with_capacity(iterators.len());
            for iterator in &iterators {
                match cx.advance(*iterator)? {
                    Some(item) => items.push(item),
                    None => return Ok(None),
                }
            }
            cx.call(function, items).map(Some)
        }
        Lazy::Filter { function, iterator } => {
            while let Some(item) = cx.advance(iterator)? {
                let verdict = match function {
                    Some(function) => cx.call(function, vec![item])?,
                    None => item,
                };
                if cx.truthy(verdict)? {
                    return Ok(Some(item));
                }
            }
            Ok(None)
        }
        Lazy::DropWhile {
            predicate,
            iterator,
            dropping,
        } => {
            while let Some(item) = cx.advance(iterator)? {
                if !dropping {
                    return Ok(Some(item));
                }
                let verdict = cx.call(predicate, vec![item])?;
                if !cx.truthy(verdict)? {
                    cx.set_val(
                        it,
                        Val::Lazy(Lazy::DropWhile {
                            predicate,
                            iterator,
                            dropping: false,
                        }),
                    );
                    return Ok(Some(item));
                }
            }
            Ok(None)
        }
        Lazy::TakeWhile {
            predicate,
            iterator,
            done,
        } => {
            if done {
                return Ok(None);
            }
            let Some(item) = cx.advance(iterator)? else {
                return Ok(None);
            };
            let verdict = cx.call(predicate, vec![item])?;
            if cx.truthy(verdict)? {
                return Ok(Some(item));
            }
            cx.set_val(
                it,
                Val::Lazy(Lazy::TakeWhile {
                    predicate,
                    iterator,
                    done: true,
                }),
            );
            Ok(None)
        }
        Lazy::ISlice {
            iterator,
            mut count,
            next,
            stop,
            step,
            done,
        } => {
            if done {
                return Ok(None);
            }
            let state = |count, next, done| {
                Val::Lazy(Lazy::ISlice {
                    iterator,
                    count,
                    next,
                    stop,
                    step,
                    done,
                })
            };
            // CPython's `islice_next`: the items before `next` skipped, then one taken; its
            // iterator's end, an exception it raises, or `stop` end the islice.
            loop {
                let skipping = count < next;
                if !skipping && stop.is_some_and(|stop| count >= stop) {
                    cx.set_val(it, state(count, next, true));
                    return Ok(None);
                }
                let item = match cx.advance(iterator) {
                    Ok(Some(item)) => item,
                    Ok(None) => {
                        cx.set_val(it, state(count, next, true));
                        return Ok(None);
                    }
                    Err(problem) => {
                        if matches!(problem, Problem::Python(_)) {
                            cx.set_val(it, state(count, next, true));
                        }
                        return Err(problem);
                    }
                };
                count += 1;
                if skipping {
                    continue;
                }
                let after = next.saturating_add(step);
                let after = stop.map_or(after, |stop| after.min(stop));
                cx.set_val(it, state(count, after, false));
                return Ok(Some(item));
            }
        }
    }
}
