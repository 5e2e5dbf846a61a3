// SPDX-License-Identifier: GPL-2.0-only

//! 7.3's `global_lock!` for 6.12, for its one form used here: a static mutex, initialised by
//! the module initialiser (`unsafe(uninit) static NAME: Mutex<T> = value;`), taken with
//! `NAME.lock()`.

use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    ops::{Deref, DerefMut},
};

use kernel::{bindings, types::Opaque};

/// A static mutex and the data it protects.
pub(crate) struct GlobalMutex<T> {
    mutex: Opaque<bindings::mutex>,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only under the mutex, from whichever thread holds it.
unsafe impl<T: Send> Sync for GlobalMutex<T> {}

impl<T> GlobalMutex<T> {
    /// A mutex holding `data`, not yet initialised.
    ///
    /// # Safety
    ///
    /// [`GlobalMutex::init`] is called before any [`GlobalMutex::lock`].
    #[doc(hidden)]
    pub(crate) const unsafe fn new(data: T) -> Self {
        Self {
            mutex: Opaque::uninit(),
            data: UnsafeCell::new(data),
        }
    }

    /// Initialises the mutex.
    ///
    /// # Safety
    ///
    /// Called once, before any other use (from the module initialiser).
    pub(crate) unsafe fn init(&'static self) {
        let key = crate::compat::static_lock_class!();
        // SAFETY: the caller's guarantee; the name and the key are static.
        unsafe {
            bindings::__mutex_init(
                self.mutex.get(),
                super::c_str_ptr(c"global_lock"),
                key.as_ptr(),
            )
        };
    }

    /// Takes the mutex (sleeps); the guard releases it.
    pub(crate) fn lock(&self) -> GlobalGuard<'_, T> {
        // SAFETY: initialised (`new`'s contract).
        unsafe { bindings::mutex_lock(self.mutex.get()) };
        GlobalGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }
}

/// The held mutex: the data, until dropped.
pub(crate) struct GlobalGuard<'a, T> {
    lock: &'a GlobalMutex<T>,
    _not_send: PhantomData<*mut ()>,
}

impl<T> Deref for GlobalGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the mutex is held while the guard lives.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for GlobalGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the mutex is held while the guard lives; `&mut self` is the only way in.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for GlobalGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: taken in `lock`, by this task.
        unsafe { bindings::mutex_unlock(self.lock.mutex.get()) };
    }
}

/// `global_lock!` for a `Mutex`, as 7.3's.
macro_rules! global_lock {
    {
        $(#[$meta:meta])* $pub:vis
        unsafe(uninit) static $name:ident: Mutex<$valuety:ty> = $value:expr;
    } => {
        $(#[$meta])*
        $pub static $name: $crate::compat::GlobalMutex<$valuety> = {
            let init: $valuety = $value;
            // SAFETY: the macro's `unsafe(uninit)`: the caller initialises it before use.
            unsafe { $crate::compat::GlobalMutex::new(init) }
        };
    };
}
pub(crate) use global_lock;
