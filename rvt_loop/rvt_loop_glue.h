/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Between the Rust and the C glue of rvt_loop.ko. Declared again by hand on the Rust side
 * (callbacks.rs), which keeps the same sizes.
 */
#ifndef RVT_LOOP_GLUE_H
#define RVT_LOOP_GLUE_H

#include <linux/types.h>

struct attribute_group;
struct ib_device;

/* The port attribute groups of every rvt_loop device (ib_device_ops.port_groups), NULL-ended. */
#define RVT_LOOP_PORT_GROUPS 2
extern const struct attribute_group *rvt_loop_port_groups[RVT_LOOP_PORT_GROUPS];

/* Rust (callbacks.rs): the unit number of the rvt_loop device @ibdev. */
u32 rvt_loop_unit(const struct ib_device *ibdev);

#endif /* RVT_LOOP_GLUE_H */
