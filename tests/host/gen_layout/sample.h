/* SPDX-License-Identifier: GPL-2.0-only */
/* A header in the shape of the rdma ones, for tests/host/gen_layout.sh. */
struct outer {
	union {
		int a;
		long b;
	};
	int c;
	struct inner named;
	char tail[];
};
struct inner {
	int x;
};
struct keyword {
	void *priv;
};
