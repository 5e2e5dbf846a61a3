// SPDX-License-Identifier: GPL-2.0-only
/* rvt_loop_kverbs.ko's copy of compat/'s C helpers for 6.12 (each module links its own). */
#include "../../compat/compat_6_12.c"
