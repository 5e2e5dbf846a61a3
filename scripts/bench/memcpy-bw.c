// SPDX-License-Identifier: GPL-2.0-only
/*
 * The guest's memcpy bandwidth: the physical limit of a one-copy loopback. rvt_loop moves
 * every byte of an RDMA write, send or read with one copy, so at large messages a provider
 * can at best approach the rate at which this guest copies memory of the same size.
 *
 *   memcpy-bw [SECONDS] [SIZE...]    (defaults: 1 second per size; 4096 65536 1048576)
 *
 * Under TCG the rate depends on how the copy is written far more than on hardware: glibc's
 * memcpy picks `rep movsb` or vector loops by size, which QEMU emulates at very different
 * speeds, and the kernel copies with `rep movsb` (FSRM) or a loop of 8-byte moves. So each
 * size is copied four ways, each for SECONDS / 4: glibc's memcpy, `rep movsb`, `rep movsq`
 * and an unrolled loop of 8-byte words, each way's rate the best of five slices of its time.
 * Output, MB being 2^20 bytes as in perftest's MB/sec:
 *
 *   method SIZE NAME MB_PER_S    one line per way
 *   memcpy SIZE MB_PER_S         the fastest of them: the limit the report divides by
 *
 * Source and destination are distinct buffers reused on every copy, as perftest reuses its
 * message buffers, so small sizes run from the cache just as the benchmark's messages do.
 * Built with gcc on the host (scripts/bench.sh); the guest sees the host's root over 9p.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void copy_fn(void *dst, const void *src, size_t size);

static void copy_libc(void *dst, const void *src, size_t size)
{
	memcpy(dst, src, size);
}

static void copy_movsb(void *dst, const void *src, size_t size)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(size) : : "memory");
}

/* Sizes here are multiples of 8. */
static void copy_movsq(void *dst, const void *src, size_t size)
{
	size_t words = size / 8;

	__asm__ volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(words) : : "memory");
}

/* The kernel's memcpy without FSRM (memcpy_orig) moves four 8-byte words a round; gcc must
 * neither turn the loop back into a call to memcpy nor into vector moves, which the kernel
 * does not use. Sizes here are multiples of 32. */
__attribute__((optimize("no-tree-loop-distribute-patterns", "no-tree-vectorize",
			"no-tree-slp-vectorize")))
static void copy_words(void *dst, const void *src, size_t size)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	for (size_t i = 0; i < size / 8; i += 4) {
		uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];

		d[i] = a;
		d[i + 1] = b;
		d[i + 2] = c;
		d[i + 3] = e;
	}
}

static const struct {
	const char *name;
	copy_fn *fn;
} methods[] = {
	{ "libc", copy_libc },
	{ "movsb", copy_movsb },
	{ "movsq", copy_movsq },
	{ "words", copy_words },
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))
/* Each way's share of the time, in slices. */
#define SLICES 5

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Copies between the two buffers until the time is up; returns MB/s. The clock is read
 * only every batch of copies so that reading it costs nothing next to a 4 KiB copy. */
static double measure(copy_fn *copy, char *dst, char *src, size_t size, double seconds)
{
	size_t batch = size >= (1 << 20) ? 1 : (1 << 20) / size;
	unsigned long long copies = 0;
	double start = now(), elapsed;

	do {
		for (size_t i = 0; i < batch; i++) {
			copy(dst, src, size);
			/* The copy must happen every time: nothing reads dst. */
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		copies += batch;
		elapsed = now() - start;
	} while (elapsed < seconds);
	return (double)copies * size / elapsed / (1 << 20);
}

static int measure_size(size_t size, double seconds)
{
	size_t alloc = (size + 4095) & ~(size_t)4095;
	char *src = aligned_alloc(4096, alloc);
	char *dst = aligned_alloc(4096, alloc);
	double best = 0;

	if (!src || !dst || size == 0 || size % 32) {
		fprintf(stderr, "memcpy-bw: %zu bytes: not a positive multiple of 32, or no memory\n",
			size);
		return 1;
	}
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	for (size_t m = 0; m < NMETHODS; m++) {
		double slice = seconds / NMETHODS / SLICES, mbps = 0;

		/* A short warm-up: page faults and cache fill are not part of the rate. */
		measure(methods[m].fn, dst, src, size, slice / 2);
		/* The best of several slices: on shared host cores, other work only ever slows
		 * a copy down, and this is to be the limit, not an average. */
		for (int i = 0; i < SLICES; i++) {
			double r = measure(methods[m].fn, dst, src, size, slice);

			if (r > mbps)
				mbps = r;
		}
		printf("method %zu %s %.2f\n", size, methods[m].name, mbps);
		if (mbps > best)
			best = mbps;
	}
	printf("memcpy %zu %.2f\n", size, best);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t defaults[] = { 4096, 65536, 1048576 };
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int nsizes = argc > 2 ? argc - 2 : 3;

	for (int i = 0; i < nsizes; i++) {
		size_t size = argc > 2 ? strtoul(argv[i + 2], NULL, 0) : defaults[i];

		if (measure_size(size, seconds))
			return 1;
	}
	return 0;
}
