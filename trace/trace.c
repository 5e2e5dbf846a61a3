// SPDX-License-Identifier: GPL-2.0-only
/*
 * Defines the C rdmavt's trace events (trace.h) in rdmavt.ko, and for each a
 * rust_do_trace_<event>() that the Rust side calls once it has seen the event enabled
 * (trace/mod.rs), as Rust Binder's rust_binder_events.c does.
 */

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "trace.h"

#ifdef RDMAVT_RS_KERNEL_6_12
/* 6.12 has no CREATE_RUST_TRACE_POINTS: the rust_do_trace_<event>() are made here. */
#define RDMAVT_RS_DEFINE_RUST_DO_TRACE
#include "compat/trace_6_12.h"
#endif
