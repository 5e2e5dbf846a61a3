// SPDX-License-Identifier: GPL-2.0-only

//! KUnit suites, written once for both kernel lines.
//!
//! 7.3's kernel crate declares a suite with the `#[kunit_tests]` attribute, a procedural macro
//! that 6.12's kernel crate lacks and that an out-of-tree module cannot bring along. A suite
//! here is a module of test functions, each taking nothing and returning `()` or a `Result`,
//! closed by [`kunit_suite!`] with the suite's name and its cases in order. The module imports
//! [`assert!`] and [`assert_eq!`] from here, which shadow core's: as with `#[kunit_tests]`, a
//! failed assertion fails the case through KUnit (and ends it) instead of panicking the
//! kernel, and so does a test that returns an error. The cases and the suite are built with
//! the kernel line's `kunit_case` and `kunit_unsafe_test_suite!` (7.3's own, or `v6_12`'s).
//!
//! ```ignore
//! mod suite {
//!     use crate::compat::kunit::{assert, assert_eq};
//!
//!     fn adds() {
//!         assert_eq!(1 + 1, 2);
//!     }
//!
//!     crate::compat::kunit::kunit_suite!(example, [adds]);
//! }
//! ```
//!
//! A test function left out of the list is dead code, which the compiler reports.

pub(crate) use super::imp::kunit::*;

/// `::kernel::$assert!` for the file `$file`: its name is a string literal on 6.12 and a C
/// string literal on 7.3, so both are given.
#[cfg(not(rdmavt_kernel_6_12))]
macro_rules! kunit_at {
    ($file:literal, $c_file:literal, $assert:ident, $($args:tt)*) => {
        ::kernel::$assert!("rdmavt-rs", $c_file, 0, $($args)*)
    };
}
#[cfg(rdmavt_kernel_6_12)]
macro_rules! kunit_at {
    ($file:literal, $c_file:literal, $assert:ident, $($args:tt)*) => {
        ::kernel::$assert!("rdmavt-rs", $file, 0, $($args)*)
    };
}
pub(crate) use kunit_at;

/// Fails the running test case unless `$cond` holds (core's `assert!` panics).
///
/// KUnit reports the line of the assertion; its file is given as the suite's `tests.rs`, as a
/// macro cannot pass on the file it is expanded in to `kunit_assert!`, which takes literals.
macro_rules! kunit_assert {
    ($cond:expr $(,)?) => {
        $crate::compat::kunit::kunit_at!("tests.rs", c"tests.rs", kunit_assert, $cond)
    };
}
pub(crate) use kunit_assert as assert;

/// Fails the running test case unless `$left == $right` (core's `assert_eq!` panics).
macro_rules! kunit_assert_eq {
    ($left:expr, $right:expr $(,)?) => {
        $crate::compat::kunit::kunit_at!("tests.rs", c"tests.rs", kunit_assert_eq, $left, $right)
    };
}
pub(crate) use kunit_assert_eq as assert_eq;

/// What a test function returns: `()`, or a `Result` whose error fails the case.
pub(crate) trait TestResult {
    /// Whether the test passed; an error is logged under the test's name.
    fn passed(self, name: &core::ffi::CStr) -> bool;
}

impl TestResult for () {
    fn passed(self, _name: &core::ffi::CStr) -> bool {
        true
    }
}

impl<T, E: core::fmt::Debug> TestResult for Result<T, E> {
    fn passed(self, name: &core::ffi::CStr) -> bool {
        match self {
            Ok(_) => true,
            Err(e) => {
                kernel::pr_err!("{}: returned {:?}\n", name.to_str().unwrap_or("?"), e);
                false
            }
        }
    }
}

/// Fails the running case unless `result` is a pass.
pub(crate) fn report(name: &core::ffi::CStr, result: impl TestResult) {
    let test_returned_ok = result.passed(name);
    kunit_at!(
        "compat/kunit.rs",
        c"compat/kunit.rs",
        kunit_assert,
        test_returned_ok
    );
}

/// A test function's name as a C string, at compile time.
#[doc(hidden)]
pub(crate) const fn c_name(name_nul: &'static str) -> &'static core::ffi::CStr {
    match core::ffi::CStr::from_bytes_with_nul(name_nul.as_bytes()) {
        Ok(name) => name,
        Err(_) => panic!("a test function's name is not a C string"),
    }
}

/// Registers the test functions `$test` of the enclosing module, in order, as the KUnit
/// suite `$suite`, which runs when the module loads.
macro_rules! kunit_suite {
    ($suite:ident, [$($test:ident),+ $(,)?]) => {
        /// KUnit's entry points to the suite's test functions.
        mod kunit_cases {
            $(
                /// Runs the test function of the same name as a KUnit case.
                ///
                /// # Safety
                ///
                /// Called by KUnit only, in the case's own thread.
                pub(super) unsafe extern "C" fn $test(_test: *mut ::kernel::bindings::kunit) {
                    $crate::compat::kunit::report(
                        $crate::compat::kunit::c_name(concat!(stringify!($test), "\0")),
                        super::$test(),
                    );
                }
            )+
        }

        static mut KUNIT_CASES: [::kernel::bindings::kunit_case; [$(stringify!($test)),+].len() + 1] = [
            $($crate::compat::kunit::kunit_case(
                $crate::compat::kunit::c_name(concat!(stringify!($test), "\0")),
                kunit_cases::$test,
            ),)+
            // SAFETY: All zeroes is the terminating case (KUnit's own arrays end with `{}`).
            unsafe { ::core::mem::zeroed() },
        ];

        $crate::compat::kunit::kunit_unsafe_test_suite!($suite, KUNIT_CASES);
    };
}
pub(crate) use kunit_suite;
