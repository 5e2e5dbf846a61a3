// SPDX-License-Identifier: GPL-2.0-only
/*
 * C glue of rdmavt.ko: what Rust cannot express or bindgen cannot reach. Logic lives in Rust.
 */

#include <linux/module.h>
#include <linux/stddef.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/rdma_vt.h>
#include <rdma/rdmavt_qp.h>
#include <rdma/rdmavt_cq.h>
#include <rdma/rdmavt_mr.h>
#include <uapi/rdma/rvt-abi.h>

#include "rdmavt_glue.h"
#include "layout/layout_generated.h"

const struct rdmavt_rs_layout_entry rdmavt_rs_layout_c[] = {
	RDMAVT_RS_LAYOUT_C_ENTRIES
};
const size_t rdmavt_rs_layout_c_len = ARRAY_SIZE(rdmavt_rs_layout_c);

/* The device API, implemented in device/ and ah/. */
EXPORT_SYMBOL(rvt_alloc_device);
EXPORT_SYMBOL(rvt_dealloc_device);
EXPORT_SYMBOL(rvt_register_device);
EXPORT_SYMBOL(rvt_unregister_device);
EXPORT_SYMBOL(rvt_init_port);
EXPORT_SYMBOL(rvt_check_ah);

/*
 * Tells a driver at run time (symbol_get) that this rdmavt accepts a device with no PCI
 * device behind it: the C rdmavt dereferences get_pci_dev() in its log messages.
 */
const int rdmavt_rs_soft_device_ok = 1;
EXPORT_SYMBOL(rdmavt_rs_soft_device_ok);

struct ib_device *rdmavt_rs_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

const char *rdmavt_rs_dev_name(struct ib_device *ibdev)
{
	return dev_name(&ibdev->dev);
}

int rdmavt_rs_ib_no_udata_io(struct ib_udata *udata)
{
	return ib_no_udata_io(udata);
}

void rdmavt_rs_rdma_destroy_ah(struct ib_ah *ah)
{
	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
}

void rdmavt_rs_init_list_head(struct list_head *list)
{
	INIT_LIST_HEAD(list);
}
