// SPDX-License-Identifier: GPL-2.0-only

//! Small macros shared by the subsystems.

/// Proves at compile time that an exported function has exactly the signature the rdma
/// headers declare for it.
///
/// bindgen turns each header declaration into an `extern "C"` item in [`crate::bindings`];
/// putting that item and our definition into one array only compiles when both coerce to the
/// same function pointer type, that is, when parameters and return type agree exactly.
macro_rules! c_export {
    ($name:ident) => {
        const _: () = {
            let _ = [crate::bindings::$name, $name];
        };
    };
}
pub(crate) use c_export;
