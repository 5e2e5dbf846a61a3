// SPDX-License-Identifier: GPL-2.0-only
/*
 * A QEMU TCG plugin for `make profile`: how many guest instructions each kernel instruction
 * address executed between two marks, so that the host can count instructions and calls per
 * message for every kernel function, including the code that runs with interrupts off, which
 * the guest's timer-based perf cannot sample under TCG.
 *
 *   qemu-system-x86_64 ... -plugin PATH/insn-count.so,out=PREFIX,start=ADDR,stop=ADDR
 *
 * Every translation block of kernel code (addresses in the upper half) gets an inline counter
 * of its executions; user-space blocks add their instruction counts to one total. When the
 * guest runs the instruction at START (scripts/bench/insn-mark.c's mark_start, linked at a
 * fixed address no other program uses), all counters are zeroed; at STOP, they are written to
 * PREFIX.N (N = 1, 2, ... in the order of the stops):
 *
 *   user INSNS                 instructions executed in user space
 *   ADDR COUNT                 a kernel instruction's address (hex) and its executions
 *
 * A block's count is its entries; every instruction of the block is given that count (an
 * interrupt that leaves a block early is rare enough not to matter). The inline counters are
 * not atomic (QEMU's inline operation is a plain add): when both vCPUs run the same block at
 * the same moment an increment can be lost, so counts are exact to a fraction of a percent.
 *
 * The plugin API is QEMU's (include/qemu/qemu-plugin.h, version 1, which Debian bookworm's
 * QEMU 7.2 implements): the few declarations it uses are below, so that no QEMU source is
 * needed to build it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plugin ABI, version 1. */
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_info;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* The lowest kernel address on x86-64 (the upper half, 4- or 5-level paging). */
#define KERNEL_START 0xff00000000000000ull

/* One translated kernel block: its entries and its instructions' addresses. */
struct block {
	uint64_t count;
	struct block *next;
	size_t n;
	uint64_t vaddr[];
};

static struct block *blocks;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t user_insns;
static uint64_t mark_start, mark_stop;
static const char *out_prefix;
static unsigned int dumps;

static void zero(unsigned int vcpu, void *data)
{
	struct block *b;

	(void)vcpu;
	(void)data;
	pthread_mutex_lock(&blocks_lock);
	for (b = blocks; b; b = b->next)
		b->count = 0;
	user_insns = 0;
	pthread_mutex_unlock(&blocks_lock);
}

static void dump(unsigned int vcpu, void *data)
{
	char path[4096];
	struct block *b;
	size_t i;
	FILE *f;

	(void)vcpu;
	(void)data;
	pthread_mutex_lock(&blocks_lock);
	snprintf(path, sizeof(path), "%s.%u", out_prefix, ++dumps);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		pthread_mutex_unlock(&blocks_lock);
		return;
	}
	fprintf(f, "user %" PRIu64 "\n", user_insns);
	for (b = blocks; b; b = b->next) {
		if (!b->count)
			continue;
		for (i = 0; i < b->n; i++)
			fprintf(f, "%" PRIx64 " %" PRIu64 "\n", b->vaddr[i], b->count);
	}
	fclose(f);
	pthread_mutex_unlock(&blocks_lock);
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	struct block *b;

	(void)id;
	if (vaddr == mark_start)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, zero, QEMU_PLUGIN_CB_NO_REGS, NULL);
	else if (vaddr == mark_stop)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, dump, QEMU_PLUGIN_CB_NO_REGS, NULL);
	if (vaddr < KERNEL_START) {
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &user_insns, n);
		return;
	}
	b = calloc(1, sizeof(*b) + n * sizeof(b->vaddr[0]));
	if (!b)
		abort();
	b->n = n;
	for (i = 0; i < n; i++)
		b->vaddr[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	pthread_mutex_lock(&blocks_lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&blocks_lock);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
}

/* parse "NAME=VALUE" into *value when the name matches. */
static bool arg(const char *a, const char *name, const char **value)
{
	size_t len = strlen(name);

	if (strncmp(a, name, len) || a[len] != '=')
		return false;
	*value = a + len + 1;
	return true;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							      const struct qemu_info *info,
							      int argc, char **argv)
{
	const char *start = NULL, *stop = NULL;
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!arg(argv[i], "out", &out_prefix) && !arg(argv[i], "start", &start) &&
		    !arg(argv[i], "stop", &stop)) {
			fprintf(stderr, "insn-count: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!out_prefix || !start || !stop) {
		fprintf(stderr, "insn-count: out=PREFIX,start=ADDR,stop=ADDR are needed\n");
		return -1;
	}
	mark_start = strtoull(start, NULL, 0);
	mark_stop = strtoull(stop, NULL, 0);
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	return 0;
}
