// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue that the Rust modules need on 6.12 only: what 6.12's kernel crate has no Rust API or
 * helper for (compat/v6_12/).
 */

#include <linux/bug.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>

#include "rdmavt_glue.h"

void rdmavt_rs_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rdmavt_rs_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

bool rdmavt_rs_spin_trylock(spinlock_t *lock)
{
	return spin_trylock(lock);
}

void rdmavt_rs_warn(const char *file, int line)
{
	WARN(1, "rdmavt-rs: WARN_ON at %s:%d\n", file, line);
}
