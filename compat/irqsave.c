// SPDX-License-Identifier: GPL-2.0-only
/*
 * The interrupt-saving spinlock of compat/irqsave.rs, on both kernel lines: what has no
 * exported function to call from Rust. Rust locks and unlocks with the kernel's own
 * _raw_spin_lock_irqsave()/_raw_spin_unlock_irqrestore(), as C's spin_lock_irqsave() does,
 * unless the kernel inlines them (these wrappers then stand in); spin_trylock_irqsave() is a
 * macro on every kernel. Each module links its own copy (rvt_loop/irqsave.c,
 * tests/kverbs/irqsave.c).
 */

#include <linux/spinlock.h>

#include "rdmavt_glue.h"

unsigned long rdmavt_rs_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

bool rdmavt_rs_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}

void rdmavt_rs_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}
