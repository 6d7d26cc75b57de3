//! The VM as kind code sees it (`kinds::Interp`): each method the VM's own.

use super::*;
use crate::sot::translator::guard::source::Source;
use crate::sot::translator::model::known::Known;

impl<'py> Interp<'py> for Vm<'py, '_> {
    fn py(&self) -> Python<'py> {
        self.py
    }

    fn val(&self, vid: Vid) -> &Val<'py> {
        Vm::val(self, vid)
    }

    fn set_val(&mut self, vid: Vid, val: Val<'py>) {
        self.values[vid] = val;
    }

    fn known(&self) -> &Known<'py> {
        &self.ops
    }

    fn push_val(&mut self, val: Val<'py>) -> Vid {
        Vm::push_val(self, val)
    }

    fn none(&mut self) -> Vid {
        Vm::none(self)
    }

    fn constant(&mut self, obj: Bound<'py, PyAny>) -> Vid {
        Vm::constant(self, obj)
    }

    fn int_value(&mut self, value: usize) -> Res<Vid> {
        Vm::int_value(self, value)
    }

    fn value_of_source(&mut self, source: Source, obj: Bound<'py, PyAny>) -> Vid {
        Vm::value_of_source(self, source, obj)
    }

    fn guard_type(&mut self, vid: Vid) {
        Vm::guard_type(self, vid);
    }

    fn add_guard(&mut self, source: SourceId, check: Check) {
        Vm::add_guard(self, source, check);
    }

    fn guard_value(&mut self, source: SourceId, obj: &Bound<'py, PyAny>) -> Res<()> {
        Vm::guard_value(self, source, obj)
    }

    fn mutated_copy(&self, obj: &Bound<'py, PyAny>) -> Option<Vid> {
        self.mutated.get(&(obj.as_ptr() as usize)).copied()
    }

    fn truthy(&mut self, vid: Vid) -> Res<bool> {
        Vm::truthy(self, vid)
    }

    fn boolean(&mut self, value: bool) -> Vid {
        Vm::boolean(self, value)
    }

    fn identical(&mut self, left: Vid, right: Vid) -> Res<bool> {
        Vm::identical(self, left, right)
    }

    fn type_of(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        Vm::type_of(self, vid)
    }

    fn len_of(&mut self, vid: Vid) -> Res<Vid> {
        Vm::len_of(self, vid)
    }

    fn items_of(&mut self, vid: Vid) -> Res<Vec<Vid>> {
        Vm::items_of(self, vid)
    }

    fn concrete(&mut self, vid: Vid) -> Res<Bound<'py, PyAny>> {
        Vm::concrete(self, vid)
    }

    fn hashable(&mut self, vid: Vid) -> Res<bool> {
        Vm::hashable(self, vid)
    }

    fn dict_items(&mut self, vid: Vid) -> Res<Vec<(Vid, Vid)>> {
        Vm::dict_items(self, vid)
    }

    fn advance(&mut self, iterator: Vid) -> Res<Option<Vid>> {
        Vm::advance(self, iterator)
    }

    fn exhausted(&mut self, iterator: Vid) -> Problem {
        Vm::exhausted(self, iterator)
    }

    fn resume_generator(&mut self, generator: Vid) -> Res<Option<Vid>> {
        Vm::resume_generator(self, generator)
    }

    fn call(&mut self, callable: Vid, args: Vec<Vid>) -> Res<Vid> {
        Vm::call(self, callable, args, vec![])
    }

    fn list_item(&mut self, list: Vid, index: usize) -> Res<Option<Vid>> {
        Vm::list_item(self, list, index)
    }

    fn readonly_copy(&mut self, dict: Vid) -> Res<Option<Vid>> {
        Vm::readonly_copy(self, dict)
    }

    fn frame_list_iterator(&mut self, iterator: Vid) -> Res<()> {
        Vm::frame_list_iterator(self, iterator)
    }

    fn inlined_truth(&mut self, vid: Vid, class: &Bound<'py, PyAny>) -> Res<Option<bool>> {
        Vm::inlined_truth(self, vid, class)
    }

    fn record(&mut self, op: &Bound<'py, PyAny>, args: Vec<Vid>) -> Res<Vid> {
        Vm::record(self, op, args, vec![])
    }

    fn argument_that_is(&self, roots: &[Vid], obj: &Bound<'py, PyAny>) -> Option<Vid> {
        Vm::argument_that_is(self, roots, obj)
    }

    fn equal_items(&mut self, element: Vid, target: Vid) -> Res<bool> {
        Vm::equal_items(self, element, target)
    }

    fn raise_not_found(&mut self, sequence: Vid, name: &str, target: Vid) -> Res<Vid> {
        Vm::raise_not_found(self, sequence, name, target)
    }

    fn check_droppable(&self, value: Vid) -> Res<()> {
        Vm::check_droppable(self, value)
    }

    fn note_keys_removed(&mut self, dict: Vid) {
        Vm::note_keys_removed(self, dict);
    }

    fn find_key(&mut self, stored: &[Vid], key: &Bound<'py, PyAny>) -> Res<Option<usize>> {
        Vm::find_key(self, stored, key)
    }

    fn find_dict_key(&mut self, items: &[(Vid, Vid)], key: &Bound<'py, PyAny>) -> Res<Option<usize>> {
        Vm::find_dict_key(self, items, key)
    }

    fn dict_set(&mut self, items: &mut Vec<(Vid, Vid)>, key: Vid, value: Vid) -> Res<Option<Vid>> {
        Vm::dict_set(self, items, key, value)
    }

    fn dict_op(&mut self, dict: Vid, op: DictOp) -> Res<()> {
        Vm::dict_op(self, dict, op)
    }

    fn add_items(&mut self, target: Vid, new_items: Vec<Vid>) -> Res<()> {
        Vm::add_items(self, target, new_items)
    }

    fn sort_items(&mut self, items: Vec<Vid>, key: Option<Vid>, reverse: bool) -> Res<Vec<Vid>> {
        Vm::sort_items(self, items, key, reverse)
    }

    fn type_lookup(&self, ty: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        Vm::type_lookup(self, ty, name)
    }

    fn load_attr(&mut self, owner: Vid, name: &str) -> Res<Vid> {
        Vm::load_attr(self, owner, name)
    }

    fn made_object_attr(
        &mut self,
        owner: Vid,
        class: Bound<'py, PyAny>,
        attrs: &[(String, Vid)],
        name: &str,
    ) -> Res<Vid> {
        Vm::made_object_attr(self, owner, class, attrs, name)
    }

    fn super_attr(&mut self, class: Bound<'py, PyAny>, receiver: Vid, name: &str) -> Res<Vid> {
        Vm::super_attr(self, class, receiver, name)
    }

    fn made_lock_method(&mut self, lock: Vid, name: &str) -> Res<Option<Vid>> {
        Vm::made_lock_method(self, lock, name)
    }

    fn signature_attr(&mut self, signature: Vid, name: &str) -> Res<Option<Vid>> {
        Vm::signature_attr(self, signature, name)
    }

    fn input_tensor(&self, sym: usize) -> Option<(SourceId, Bound<'py, PyAny>)> {
        let tensor = self.input_tensors.get(&sym)?;
        Some((self.graph.inputs[sym], tensor.clone()))
    }

    fn is_backend_tensor(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.backend.is_tensor(obj)
    }

    fn contains(&mut self, container: Vid, item: Vid) -> Res<bool> {
        Vm::contains(self, container, item)
    }

    fn subscript(&mut self, container: Vid, key: Vid) -> Res<Vid> {
        Vm::subscript(self, container, key)
    }

    fn is_tensor(&self, vid: Vid) -> bool {
        self.is_tensor_val(vid)
    }

    fn contains_tensor(&self, vid: Vid) -> bool {
        Vm::contains_tensor(self, vid)
    }

    fn check_native_key(&self, key: &Bound<'py, PyAny>) -> Res<()> {
        Vm::check_native_key(self, key)
    }

    fn wrap_result(&mut self, result: Bound<'py, PyAny>) -> Vid {
        Vm::wrap_result(self, result)
    }

    fn intern(&mut self, source: Source) -> SourceId {
        Vm::intern(self, source)
    }

    fn tensor_meta_read(&mut self, vid: Vid) {
        Vm::tensor_meta_read(self, vid);
    }

    fn tensor_attribute_read(&mut self, vid: Vid, tensor: &Bound<'py, PyAny>, name: &str) {
        if !self.backend.is_type_attribute(tensor, name) {
            Vm::tensor_meta_read(self, vid);
        }
    }

    fn is_meta_attribute(&self, tensor: &Bound<'py, PyAny>, name: &str) -> bool {
        self.backend.is_meta_attribute(tensor, name)
    }

    fn is_backend_constant(&self, obj: &Bound<'py, PyAny>) -> bool {
        self.backend.is_constant_value(obj)
    }
}
