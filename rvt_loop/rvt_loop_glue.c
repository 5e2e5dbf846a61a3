// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rvt_loop.ko: the sysfs attributes of each port, which ib_sysfs.h's macros build
 * and which the shared bindings do not reach. Logic lives in Rust.
 */

#include <linux/sysfs.h>
#include <rdma/ib_sysfs.h>
#include <rdma/ib_verbs.h>

#include "rvt_loop_glue.h"

/* ports/1/rvt_loop/unit: which rvt_loop device this is (its name is rvt_loop<unit>). */
static ssize_t unit_show(struct ib_device *ibdev, u32 port_num,
			 struct ib_port_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", rvt_loop_unit(ibdev));
}
static IB_PORT_ATTR_RO(unit);

static struct attribute *rvt_loop_port_attrs[] = {
	&ib_port_attr_unit.attr,
	NULL,
};

static const struct attribute_group rvt_loop_port_group = {
	.name = "rvt_loop",
	.attrs = rvt_loop_port_attrs,
};

const struct attribute_group *rvt_loop_port_groups[RVT_LOOP_PORT_GROUPS] = {
	&rvt_loop_port_group,
	NULL,
};
