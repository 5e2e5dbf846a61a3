// SPDX-License-Identifier: GPL-2.0-only
/*
 * A CQ's ring keeps the kind it was created with. A user CQ gets a ring mmap'ed into the
 * process when the create call's reply has room for the ring's mmap offset, and a kernel ring
 * (polled through uverbs) when it has none; libhfi1verbs always leaves the room, but the
 * uverbs write() ABI lets a process choose. A resize whose reply disagrees with the CQ's kind
 * must fail with EINVAL and leave the CQ working:
 *
 *   mapped  a CQ created through libibverbs (mapped ring), resized through a raw RESIZE_CQ
 *           whose reply has no room for the new ring's offset
 *   kernel  a CQ created through a raw CREATE_CQ whose reply has no room (a kernel ring),
 *           resized with room for an offset
 *
 * rdmavt-rs once freed the ring still in use in both cases (a use-after-free and a double
 * free); the C rdmavt reads the other kind's ring pointer, which is NULL: an oops. The
 * wrapper runs the cases on rdmavt-rs only (--cases); on the C rdmavt it reports them as
 * skipped.
 */
#include <stdint.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include "verbs_util.h"

/* One raw write() command: the header, then the command with its response pointer. */
struct resize_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_resize_cq cmd;
	__u64 driver_data[1];
};

/* Sends a raw RESIZE_CQ with `room` bytes of driver reply after the core's; 0 or an errno. */
static int raw_resize(struct ibv_context *ctx, uint32_t handle, uint32_t cqe, size_t room)
{
	struct { struct ib_uverbs_resize_cq_resp resp; __u64 offset; } reply;
	struct resize_cmd c = {
		.hdr = { .command = IB_USER_VERBS_CMD_RESIZE_CQ,
			 .in_words = (sizeof(c.hdr) + sizeof(c.cmd)) / 4,
			 .out_words = (sizeof(reply.resp) + room) / 4 },
		.cmd = { .response = (uintptr_t)&reply, .cq_handle = handle, .cqe = cqe },
	};
	size_t len = sizeof(c.hdr) + sizeof(c.cmd);

	return write(ctx->cmd_fd, &c, len) == (ssize_t)len ? 0 : errno;
}

/* A raw CREATE_CQ whose reply has no room for an mmap offset: its handle, or -errno. */
static int64_t raw_create_kernel_ring(struct ibv_context *ctx, uint32_t cqe)
{
	struct ib_uverbs_create_cq_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq cmd;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_CREATE_CQ,
			 .in_words = sizeof(c) / 4, .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp, .cqe = cqe, .comp_channel = -1 },
	};

	if (write(ctx->cmd_fd, &c, sizeof(c)) != sizeof(c))
		return -errno;
	return resp.cq_handle;
}

static int raw_destroy(struct ibv_context *ctx, uint32_t handle)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_cq cmd;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_DESTROY_CQ,
			 .in_words = sizeof(c) / 4, .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp, .cq_handle = handle },
	};

	return write(ctx->cmd_fd, &c, sizeof(c)) == sizeof(c) ? 0 : errno;
}

static void mapped_case(struct ibv_context *ctx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_wc wc;

	if (!cq) {
		tap_result(0, "mapped CQ: create: %s", strerror(errno));
		return;
	}
	expect_errno(raw_resize(ctx, cq->handle, 16, 0), EINVAL,
		     "mapped CQ, resize whose reply has no room for the offset");
	tap_result(ibv_poll_cq(cq, 1, &wc) == 0, "mapped CQ: still polls (empty) afterwards");
	expect_errno(ibv_resize_cq(cq, 32), 0, "mapped CQ: a resize through libibverbs after it");
	expect_errno(ibv_destroy_cq(cq), 0, "mapped CQ: destroyed");
}

static void kernel_case(struct ibv_context *ctx)
{
	int64_t handle = raw_create_kernel_ring(ctx, 8);

	if (handle < 0) {
		tap_result(0, "kernel-ring CQ: raw create: %s", strerror(-handle));
		return;
	}
	expect_errno(raw_resize(ctx, handle, 16, sizeof(__u64)), EINVAL,
		     "kernel-ring CQ, resize whose reply has room for an offset");
	expect_errno(raw_resize(ctx, handle, 16, 0), 0, "kernel-ring CQ, resize without room");
	expect_errno(raw_destroy(ctx, handle), 0, "kernel-ring CQ: destroyed");
}

int main(int argc, char **argv)
{
	int run = argc > 1 && !strcmp(argv[1], "--cases");
	struct ibv_context *ctx;

	printf("TAP version 13\n");
	if (!run) {
		tap_skip("mapped CQ, resize whose reply has no room for the offset",
			 "the C rdmavt dereferences the NULL kernel ring (a C bug)");
		tap_skip("kernel-ring CQ, resize whose reply has room for an offset",
			 "the C rdmavt dereferences the NULL mapped ring (a C bug)");
		return tap_finish();
	}
	ctx = open_test_device();
	if (!ctx) {
		tap_result(0, "open %s", TEST_DEVICE);
		return tap_finish();
	}
	mapped_case(ctx);
	kernel_case(ctx);
	ibv_close_device(ctx);
	return tap_finish();
}
