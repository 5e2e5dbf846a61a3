/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One rust_do_trace_<event>() per event of trace/trace.h, for 6.12, whose tracepoint.h has no
 * Rust support (7.3 makes these itself: DEFINE_RUST_DO_TRACE). Each is a call of the event's
 * trace_<event>(). Included after trace/trace.h, this header declares them (for bindgen, from
 * bindings/bindings_helper.h); with RDMAVT_RS_DEFINE_RUST_DO_TRACE it defines them
 * (compat/compat_6_12.c). It reads the event headers once more, as define_trace.h does, with
 * DECLARE_TRACE, into which every TRACE_EVENT and DEFINE_EVENT expands, redefined.
 */

/* After CREATE_TRACE_POINTS, define_trace.h defines it again "for more files": not these. */
#undef CREATE_TRACE_POINTS
#undef DECLARE_TRACE
#ifdef RDMAVT_RS_DEFINE_RUST_DO_TRACE
#define DECLARE_TRACE(name, proto, args)			\
	notrace void rust_do_trace_##name(proto);		\
	notrace void rust_do_trace_##name(proto)		\
	{							\
		trace_##name(args);				\
	}
#else
#define DECLARE_TRACE(name, proto, args)			\
	void rust_do_trace_##name(proto);
#endif

#define TRACE_HEADER_MULTI_READ
#include "trace/trace.h"
#undef TRACE_HEADER_MULTI_READ
