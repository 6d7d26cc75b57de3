//! Model layers (the backend's `layer_types`): attribute stores the backend says are plain.

use super::*;

impl<'py, 'b> Vm<'py, 'b> {
    /// `layer.name = value` on a layer from the frame, where the backend's `layer_store` says
    /// the layer's `__setattr__` only makes `layer.name` give `value` (a Paddle layer files a
    /// tensor among its buffers): replayed after the graph through that `__setattr__`, and read
    /// back as `value` meanwhile. The tables whose entry `name` the backend needs absent are
    /// guarded so. None where the backend has no such rule for this store.
    pub(super) fn store_layer_attr(&mut self, owner: Vid, name: &str, value: Vid) -> Res<Option<()>> {
        let Val::Obj {
            obj,
            source: Some(source),
        } = self.val(owner)
        else {
            return Ok(None);
        };
        let (obj, source) = (obj.clone(), *source);
        if !self.backend.is_layer(&obj) {
            return Ok(None);
        }
        let value_type = self.type_of(value)?;
        let Some(tables) = self.backend.layer_store(&obj, name, &value_type)? else {
            return Ok(None);
        };
        self.guard_type(owner);
        // What the layer's `__setattr__` does depends on the value's type.
        self.guard_type(value);
        for table in tables {
            let table = self.intern(Source::Attr(source, self.name_ref(&table)));
            let entry = self.intern(Source::Item(table, self.name_ref(name)));
            self.add_guard(entry, Check::Absent);
        }
        self.side_effects.push(SideEffect::StoreAttr {
            target: owner,
            name: name.to_owned(),
            value,
            through_object: false,
        });
        self.stored_attrs
            .push((obj.as_ptr() as usize, name.to_owned(), Some(value)));
        Ok(Some(()))
    }

    /// Reading a table of a layer (a dict or set of its `__dict__`: its buffers, parameters,
    /// sublayers) after a store on it that its `__setattr__` replays later, which would
    /// change the table: a break, as the read would see the table before the store.
    pub(super) fn stale_layer_table(&self, obj: &Bound<'py, PyAny>, name: &str) -> Res<()> {
        let address = obj.as_ptr() as usize;
        if !self.stored_attrs.iter().any(|(p, ..)| *p == address) || !self.backend.is_layer(obj) {
            return Ok(());
        }
        let table = obj
            .getattr(pyo3::intern!(obj.py(), "__dict__"))
            .and_then(|dict| dict.get_item(name))
            .is_ok_and(|v| v.is_instance_of::<PyDict>() || v.is_instance_of::<pyo3::types::PySet>());
        if table {
            return graph_break(format!(
                "the table {name} of a layer whose attribute the translation stored (its __setattr__ runs later)"
            ));
        }
        Ok(())
    }
}
