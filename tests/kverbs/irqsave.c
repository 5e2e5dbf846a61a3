// SPDX-License-Identifier: GPL-2.0-only
/* rvt_loop_kverbs.ko's copy of compat/irqsave.c (each module links its own). */
#include "../../compat/irqsave.c"
