// SPDX-License-Identifier: GPL-2.0-only
// What bindgen makes of gen_layout/sample.h, for tests/host/gen_layout.sh.
#[repr(C)]
pub struct outer {
    pub __bindgen_anon_1: outer__bindgen_ty_1,
    pub c: ffi::c_int,
    pub named: inner,
    pub __bindgen_padding_0: [u8; 4usize],
    pub tail: __IncompleteArrayField<ffi::c_char>,
}
#[repr(C)]
pub union outer__bindgen_ty_1 {
    pub a: ffi::c_int,
    pub b: ffi::c_long,
}
#[repr(C)]
pub struct inner {
    pub x: ffi::c_int,
}
#[repr(C)]
pub struct keyword {
    pub priv_: *mut ffi::c_void,
}
