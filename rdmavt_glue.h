/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the C glue of rdmavt.ko offers the Rust side. Everything here is read by bindgen.
 */
#ifndef RDMAVT_RS_GLUE_H
#define RDMAVT_RS_GLUE_H

#include <linux/types.h>

/**
 * struct rdmavt_rs_layout_entry - one size, alignment or field offset of an ABI struct
 * @name: "struct.field", "struct.(size)" or "struct.(align)"
 * @value: what the C compiler computes for it
 */
struct rdmavt_rs_layout_entry {
	const char *name;
	size_t value;
};

/* The C compiler's view of every struct in the rdmavt ABI headers (layout_generated.h). */
extern const struct rdmavt_rs_layout_entry rdmavt_rs_layout_c[];
extern const size_t rdmavt_rs_layout_c_len;

/*
 * Wrappers for the static inline helpers and macros of ib_core that Rust calls; each does
 * exactly what its namesake does.
 */
struct ib_device;
struct ib_udata;
struct ib_ah;
struct list_head;

struct ib_device *rdmavt_rs_ib_alloc_device(size_t size);
const char *rdmavt_rs_dev_name(struct ib_device *ibdev);
int rdmavt_rs_ib_no_udata_io(struct ib_udata *udata);
void rdmavt_rs_rdma_destroy_ah(struct ib_ah *ah);
void rdmavt_rs_init_list_head(struct list_head *list);

#endif /* RDMAVT_RS_GLUE_H */
