// SPDX-License-Identifier: GPL-2.0-only

//! `this_cpu_inc` and `this_cpu_dec` of a `__percpu` counter, inline, on both kernel lines.
//!
//! Neither kernel crate has per-CPU operations, and percpu-refcount.h's get and put are static
//! inlines, which Rust could only reach through a C function: a call per key check and per
//! reference given back (`make profile` counted them), each with its own RCU read-side section.
//! On x86-64 with SMP, per-CPU data is addressed through `%gs`, and C's `this_cpu_inc` is one
//! `inc` of `%gs:(ptr)` (arch/x86/include/asm/percpu.h), its `this_cpu_dec` one `dec`:
//! instructions that neither an interrupt nor a preemption can split, so they need no lock and
//! no disabled preemption of their own. That is all [`this_cpu_inc`] and [`this_cpu_dec`] are.
//! Elsewhere (no SMP, other architectures) they do nothing and say so, and the caller takes the
//! C path.

use kernel::ffi::c_ulong;

/// Defines `$name`, C's `$name` of a per-CPU counter: the one instruction `$insn` on x86-64
/// with SMP, and elsewhere nothing but `false`, for the caller to take C's path.
macro_rules! this_cpu_op {
    ($name:ident, $insn:literal) => {
        #[doc = concat!("C's `", stringify!($name), "` of this CPU's instance of the per-CPU ")]
        #[doc = "counter `ptr`; `false` (and nothing done) where that is not one instruction, for"]
        #[doc = "the caller to use C's."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = ""]
        #[doc = "`ptr` is a `__percpu` pointer to a `c_ulong` (from `alloc_percpu` or a per-CPU"]
        #[doc = "variable) that stays allocated for the call."]
        #[cfg(all(target_arch = "x86_64", CONFIG_SMP))]
        #[inline(always)]
        pub(crate) unsafe fn $name(ptr: *mut c_ulong) -> bool {
            // SAFETY: `%gs` holds this CPU's per-CPU base, so `gs:[ptr]` is this CPU's instance
            // of a valid `__percpu` pointer (caller's guarantee), as in C's `percpu_add_op`; the
            // one instruction reads and writes only it, and no stack. The asm may touch memory,
            // so the compiler keeps it in program order with the accesses around it, as C's
            // `"+m"` operand does.
            unsafe {
                core::arch::asm!(
                    concat!($insn, " qword ptr gs:[{ptr}]"),
                    ptr = in(reg) ptr,
                    options(nostack),
                );
            }
            true
        }

        #[doc = concat!("C's `", stringify!($name), "`: not one instruction here, so `false`.")]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = ""]
        #[doc = "As on x86-64 with SMP."]
        #[cfg(not(all(target_arch = "x86_64", CONFIG_SMP)))]
        #[inline(always)]
        pub(crate) unsafe fn $name(_ptr: *mut c_ulong) -> bool {
            false
        }
    };
}

this_cpu_op!(this_cpu_inc, "inc");
this_cpu_op!(this_cpu_dec, "dec");
