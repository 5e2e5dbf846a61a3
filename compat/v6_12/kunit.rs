// SPDX-License-Identifier: GPL-2.0-only

//! 7.3's `kunit::kunit_case` and `kunit_unsafe_test_suite!` for 6.12, whose kernel crate has
//! only KUnit's assertions. The same names, arguments and C structures as 7.3's; the fields
//! 7.3 spells out (all of them KUnit's initial values: no parameters, normal speed, success,
//! no log) are zero here, as C's `KUNIT_CASE()` and `kunit_test_suite()` leave them.

/// The test case `name`, run by `run_case`.
pub(crate) const fn kunit_case(
    name: &'static core::ffi::CStr,
    run_case: unsafe extern "C" fn(*mut kernel::bindings::kunit),
) -> kernel::bindings::kunit_case {
    // SAFETY: `kunit_case` is a C struct of pointers, optional function pointers, integers and
    // C enums whose zero is a value of theirs (no parameters, normal speed, success): all zeroes
    // is a valid case, the array terminator itself.
    let mut case: kernel::bindings::kunit_case = unsafe { core::mem::zeroed() };
    case.run_case = Some(run_case);
    case.name = name.as_ptr().cast();
    case
}

/// The suite `name` of the cases at `test_cases`.
pub(crate) const fn kunit_suite(
    name: [kernel::ffi::c_char; 256],
    test_cases: *mut kernel::bindings::kunit_case,
) -> kernel::bindings::kunit_suite {
    // SAFETY: `kunit_suite` is a C struct of a name, optional function pointers, pointers,
    // integers, a bool and C enums whose zero is a value of theirs: all zeroes is a valid suite
    // (no hooks, normal speed, success, not yet initialised).
    let mut suite: kernel::bindings::kunit_suite = unsafe { core::mem::zeroed() };
    suite.name = name;
    suite.test_cases = test_cases;
    suite
}

/// Registers the KUnit suite `$name` of the case array `$test_cases` in the module's
/// `.kunit_test_suites` section, where KUnit finds it when the module loads.
///
/// # Safety
///
/// `$test_cases` is a static array of valid cases that ends with an all-zero one.
macro_rules! kunit_unsafe_test_suite {
    ($name:ident, $test_cases:ident) => {
        const _: () = {
            const NAME: [::kernel::ffi::c_char; 256] = {
                let name = ::core::stringify!($name).as_bytes();
                let mut out = [0; 256];
                ::core::assert!(name.len() < 256, "a KUnit suite name has at most 255 bytes");
                let mut i = 0;
                while i < name.len() {
                    out[i] = name[i] as ::kernel::ffi::c_char;
                    i += 1;
                }
                out
            };

            static mut SUITE: ::kernel::bindings::kunit_suite = $crate::compat::kunit::kunit_suite(
                NAME,
                ::core::ptr::addr_of_mut!($test_cases).cast(),
            );

            #[used]
            #[link_section = ".kunit_test_suites"]
            static mut ENTRY: *const ::kernel::bindings::kunit_suite =
                ::core::ptr::addr_of_mut!(SUITE);
        };
    };
}
pub(crate) use kunit_unsafe_test_suite;
