// SPDX-License-Identifier: GPL-2.0-only
/*
 * The guest's marks for the instruction-counting plugin (scripts/bench/insn-count.c):
 *
 *   insn-mark start    zero the plugin's counters
 *   insn-mark stop     write them out
 *
 * The plugin watches the first instruction of mark_start and mark_stop. The binary is static
 * and linked at a fixed address that no other program in the guest uses (scripts/bench.sh
 * passes -Ttext-segment and reads the two addresses with nm), so the addresses are the same
 * in every run.
 */
#include <stdio.h>
#include <string.h>

__attribute__((noinline, used)) void mark_start(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mark_stop(void)
{
	/* Not the same body as mark_start's, so that no compiler folds the two into one. */
	__asm__ volatile("nop" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "start")) {
		mark_start();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "stop")) {
		mark_stop();
		return 0;
	}
	fprintf(stderr, "usage: insn-mark start|stop\n");
	return 2;
}
