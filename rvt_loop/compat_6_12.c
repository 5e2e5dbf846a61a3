// SPDX-License-Identifier: GPL-2.0-only
/* rvt_loop.ko's copy of compat/'s C helpers for 6.12 (rdmavt.ko links its own). */
#include "../compat/compat_6_12.c"
