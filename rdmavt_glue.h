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

#endif /* RDMAVT_RS_GLUE_H */
