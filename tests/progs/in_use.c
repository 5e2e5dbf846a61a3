// SPDX-License-Identifier: GPL-2.0-only
/*
 * Verbs objects that are still in use, on rvt_loop0 through libibverbs:
 *   - a CQ that a QP uses cannot be destroyed (EBUSY), nor a PD that holds an MR or a QP;
 *     once their users are gone, both go;
 *   - a ring that its creator has mapped (a user CQ's, found in /proc/self/maps) cannot be
 *     mapped a second time at its offset (EINVAL): rdmavt hands each ring out once;
 *   - a mapping larger than the ring fails (EINVAL) and leaves the ring to be mapped at its
 *     size: this program interposes mmap() (it is linked with -rdynamic), so when
 *     libhfi1verbs maps the new CQ's ring it first tries one page more.
 * Prints TAP. With --hold it instead opens the device, allocates a PD, says "holding" and
 * keeps both until its standard input ends: a user of the device for the wrapper to unload
 * rvt_loop under.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>
#include "verbs_util.h"

#define DRIVER_MMAP_BYTES (256 * 4096)	/* below this, offsets belong to the driver */

/* Set to probe the next ring mapping; the probe's errno (0: it was mapped) lands here. */
static int probe_next_ring, probe_errno = -1;

/*
 * libhfi1verbs' mmap(): while probe_next_ring is set, the first mapping of a ring (a uverbs
 * file, above the driver's range) is first tried one page larger than asked.
 */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	void *p;

	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
	if (probe_next_ring && fd >= 0 && off >= DRIVER_MMAP_BYTES) {
		probe_next_ring = 0;
		p = real(addr, len + 4096, prot, flags, fd, off);
		probe_errno = p == MAP_FAILED ? errno : 0;
		if (p != MAP_FAILED)
			munmap(p, len + 4096);
	}
	return real(addr, len, prot, flags, fd, off);
}

/* The offsets of this process's mappings of a uverbs device file; returns how many. */
static int uverbs_mappings(uint64_t *offsets, size_t *sizes, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		uint64_t off;

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %*s %" SCNx64, &start, &end, &off) != 3)
			continue;
		offsets[n] = off;
		sizes[n++] = end - start;
	}
	fclose(f);
	return n;
}

static void in_use_checks(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	static char buf[4096];
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	(void)ctx;
	tap_result(qp && mr, "an RC QP and an MR (%s)", qp && mr ? "ok" : strerror(errno));
	if (!qp || !mr)
		return;
	expect_errno(ibv_destroy_cq(cq), EBUSY, "destroy a CQ a QP uses");
	expect_errno(ibv_dealloc_pd(pd), EBUSY, "dealloc a PD that holds a QP and an MR");
	expect_errno(ibv_destroy_qp(qp), 0, "destroy the QP");
	expect_errno(ibv_dealloc_pd(pd), EBUSY, "dealloc a PD that still holds an MR");
	expect_errno(ibv_dereg_mr(mr), 0, "deregister the MR");
}

static void remap_checks(struct ibv_context *ctx)
{
	uint64_t offsets[16];
	size_t sizes[16];
	int i, n = uverbs_mappings(offsets, sizes, 16);
	int found = 0;

	for (i = 0; i < n; i++) {
		void *p;

		if (offsets[i] < DRIVER_MMAP_BYTES)
			continue;
		found = 1;
		p = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
			 (off_t)offsets[i]);
		expect_errno(p == MAP_FAILED ? errno : 0, EINVAL,
			     "a second mmap of a mapped ring's offset");
		if (p != MAP_FAILED)
			munmap(p, sizes[i]);
	}
	tap_result(found, "the CQ's ring is mapped from the uverbs file (%d mappings)", n);
}

static int hold(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	char c;

	if (!pd) {
		fprintf(stderr, "in_use --hold: %s: %s\n", TEST_DEVICE, strerror(errno));
		return 1;
	}
	printf("holding\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = open_test_device();
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	if (argc > 1 && !strcmp(argv[1], "--hold"))
		return hold(ctx);
	printf("TAP version 13\n");
	if (!ctx) {
		tap_result(0, "open %s", TEST_DEVICE);
		return tap_finish();
	}
	pd = ibv_alloc_pd(ctx);
	probe_next_ring = 1;
	cq = pd ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	probe_next_ring = 0;
	tap_result(cq != NULL, "PD and CQ on %s, the ring mapped at its size after the probe (%s)",
		   TEST_DEVICE, cq ? "ok" : strerror(errno));
	if (!cq)
		return tap_finish();
	expect_errno(probe_errno, EINVAL, "an mmap one page larger than the CQ's ring");
	remap_checks(ctx);
	in_use_checks(ctx, pd, cq);
	expect_errno(ibv_destroy_cq(cq), 0, "destroy the CQ once unused");
	expect_errno(ibv_dealloc_pd(pd), 0, "dealloc the PD once empty");
	ibv_close_device(ctx);
	return tap_finish();
}
