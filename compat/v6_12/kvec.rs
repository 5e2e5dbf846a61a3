// SPDX-License-Identifier: GPL-2.0-only

//! The `KVec` methods of 7.3 that 6.12's lacks.

use kernel::alloc::{Allocator, Vec};

/// An index out of range.
#[derive(Debug)]
pub(crate) struct RemoveError;

/// `push_within_capacity` and `remove`, as 7.3's `Vec` has them.
pub(crate) trait KVecExt<T> {
    /// Appends `v` if there is room without allocating; gives it back otherwise.
    fn push_within_capacity(&mut self, v: T) -> Result<(), T>;

    /// Takes out the element at `i`, shifting the rest down; an error when out of range.
    fn remove(&mut self, i: usize) -> Result<T, RemoveError>;
}

impl<T, A: Allocator> KVecExt<T> for Vec<T, A> {
    fn push_within_capacity(&mut self, v: T) -> Result<(), T> {
        let len = self.len();
        let Some(slot) = self.spare_capacity_mut().first_mut() else {
            return Err(v);
        };
        slot.write(v);
        // SAFETY: the slot after the last element is initialised just now.
        unsafe { self.set_len(len + 1) };
        Ok(())
    }

    fn remove(&mut self, i: usize) -> Result<T, RemoveError> {
        let len = self.len();
        if i >= len {
            return Err(RemoveError);
        }
        let p = self.as_mut_ptr();
        // SAFETY: `i < len`: the element is initialised; it is read out and the `len - i - 1`
        // after it move down over it, within the buffer; the length then drops by one, so the
        // moved-from last slot is no longer an element.
        unsafe {
            let v = p.add(i).read();
            core::ptr::copy(p.add(i + 1), p.add(i), len - i - 1);
            self.set_len(len - 1);
            Ok(v)
        }
    }
}
