//! Strings: formatting, conversions, f-strings and t-strings.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    pub(super) fn format(&mut self, v: Vid, conversion: usize, spec: Option<Vid>) -> Res<Vid> {
        let converted = if conversion == 0 {
            v
        } else {
            self.convert(v, conversion)?
        };
        let spec = match spec {
            Some(s) => s,
            None => self.constant(PyString::new(self.py, "").into_any()),
        };
        self.text_of("format", converted, &[spec])
    }

    pub(super) fn convert(&mut self, v: Vid, conversion: usize) -> Res<Vid> {
        let name = match conversion {
            1 => "str",
            2 => "repr",
            3 => "ascii",
            _ => return unsupported("a conversion"),
        };
        self.text_of(name, v, &[])
    }

    /// An f-string's `str()`, `repr()`, `ascii()` or `format()` of `v`.
    pub(super) fn text_of(&mut self, builtin: &str, v: Vid, rest: &[Vid]) -> Res<Vid> {
        if let Some(text) = self.inline_builtin_method(builtin, v, rest)? {
            return Ok(text);
        }
        let Some(value) = self.folded_argument(v, builtin)? else {
            return self.refuse_folding(&format!("builtin {builtin}()"), v);
        };
        let mut args = vec![value];
        for arg in rest {
            args.push(self.concrete(*arg)?);
        }
        let text =
            crate::sot::translator::pyutil::builtin(self.py, builtin)?.call1(PyTuple::new(self.py, args)?)?;
        Ok(self.constant(text))
    }

    pub(super) fn interpolation(
        &mut self,
        value: Vid,
        expression: Vid,
        conversion: usize,
        spec: Option<Vid>,
    ) -> Res<Vid> {
        let conversion = match conversion {
            1 => Some("s"),
            2 => Some("r"),
            3 => Some("a"),
            _ => None,
        };
        let conversion = self.constant(conversion.into_pyobject(self.py)?.into_any());
        let spec = match spec {
            Some(s) => s,
            None => self.constant(PyString::new(self.py, "").into_any()),
        };
        let parts = [value, expression, conversion, spec];
        if self.contains_tensor(value) {
            // Kept symbolic: its value is the graph's (a tensor is never made a Python value).
            return Ok(self.push_val(Val::Interpolation(parts)));
        }
        let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
        let made = self
            .templatelib("Interpolation")?
            .call1(PyTuple::new(self.py, parts)?)?;
        Ok(self.constant(made))
    }

    pub(super) fn templatelib(&self, name: &str) -> PyResult<Bound<'py, PyAny>> {
        import(self.py, "string.templatelib")?.getattr(name)
    }

    pub(super) fn template(&mut self, strings: Vid, interpolations: Vid) -> Res<Vid> {
        let strings = self.items_of(strings)?;
        let interpolations = self.items_of(interpolations)?;
        let mut parts = Vec::new();
        for (i, s) in strings.iter().enumerate() {
            parts.push(*s);
            if let Some(interp) = interpolations.get(i) {
                parts.push(*interp);
            }
        }
        let symbolic = interpolations
            .iter()
            .any(|i| matches!(self.val(*i), Val::Interpolation(_)));
        if symbolic && strings.len() == interpolations.len() + 1 {
            return Ok(self.push_val(Val::Template(parts)));
        }
        let parts = parts.iter().map(|p| self.concrete(*p)).collect::<Res<Vec<_>>>()?;
        let made = self
            .templatelib("Template")?
            .call1(PyTuple::new(self.py, parts)?)?;
        Ok(self.constant(made))
    }
}
