# SPDX-License-Identifier: GPL-2.0-only
#
# rdmavt-rs: user-facing targets. The kernel's build system reads Kbuild, not this file.
#
#   make              build rdmavt.ko against KDIR (default: the cached test kernel, built
#                     first if needed)
#   make clippy       the same build under clippy; any warning in our code fails it
#   make rustfmt      formats our Rust code as the kernel formats its own (.rustfmt.toml is the
#                     kernel's), with rustc-web's rustfmt; make rustfmtcheck only checks
#   make run          the main job: boot the test VM, load the modules, show the RDMA devices
#   make check        every test: host-side tests, then KUnit and kselftests in the VM, on
#                     rdmavt-rs and on the in-tree C rdmavt; then the 6.12 leg (its kernel,
#                     the modules for it, and a subset of the kselftests on both rdmavt)
#   make test-progs   the C test programs (tests/progs/) into .test-bin/
#   make clean
#   make modules_install    install rdmavt.ko and rvt_loop.ko into <modules dir>/<release>/updates
#                     and run depmod, so that modprobe picks rdmavt-rs; honours KDIR and
#                     INSTALL_MOD_PATH. Without KDIR: the cached test kernel's modules dir,
#                     the one the test VM's modprobe uses (scripts/modules.sh)
#   make modules_uninstall  remove them again and rerun depmod: the in-tree rdmavt is back
#   make bench        perftest on rdmavt-rs, C rdmavt, rxe and siw on the benchmark kernel, boot
#                     after boot; a table with medians and ranges, and a plot (README)
#                     BENCH_PROVIDERS="rs c", BENCH_ROUNDS=N, BENCH_QUICK=1 (a first look),
#                     BENCH_HELPERS=inline (clang-22 and CONFIG_RUST_INLINE_HELPERS),
#                     BENCH_ONLY="send_lat_8 read_bw_4k" (only these points)
#                     BENCH_PROVIDERS="rs rs-notrace" BENCH_REFERENCE=rs-notrace (what the
#                     disabled trace events cost: ratios to rdmavt-rs built without them)
#   make bench-quick  make bench BENCH_QUICK=1
#   make profile      perf record during two perftest points, rdmavt-rs beside C: docs/perf.md
#   make stress       the stress suite alone (tests/kselftest/stress.sh) on both rdmavt modules,
#                     each phase DURATION seconds (default 60; make check runs it with 8)
#   make fuzz         the differential fuzzer alone (tests/kselftest/fuzz.py) on both rdmavt
#                     modules, seeds 1 to SEEDS (default 100; make check runs 1 to 6), STEPS
#                     steps each (default 80), compared seed by seed
#
# KERNEL=6.12 (make, make run, make modules_install, make bench): the same for the 6.12 LTS
# line, on its own cached kernel (scripts/kernel.sh), built in .build/6.12/.
# A user's own Rust-enabled kernel: make KDIR=/lib/modules/$(uname -r)/build

REPO := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
SCRIPTS := $(REPO)/scripts

# Debian's toolchain, which the kernel build also used. Absolute paths, so that a rustup
# toolchain earlier in PATH is never picked up by accident.
LLVM ?= -19
RUSTC := /usr/bin/rustc
CLIPPY_DRIVER := /usr/bin/clippy-driver
CACHE_ROOT := $(or $(RDMAVT_RS_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rdmavt-rs)
BINDGEN := $(CACHE_ROOT)/tools/bin/bindgen

# KDIR defaults to the cached test kernel; scripts/kernel.sh builds it if it is not there yet.
ifeq ($(KDIR),)
KDIR_CMD = $$(bash $(SCRIPTS)/kernel.sh)
else
KDIR_CMD = $(KDIR)
endif

# The kernel line: 7.3 (default) or 6.12 (make KERNEL=6.12 ...), for the cached kernel that
# KDIR_CMD builds and the tests boot; the scripts read it from the environment.
KERNEL ?= 7.3
export KERNEL
# Where the modules are built (lib.sh's module_tree). kbuild writes its objects beside the
# sources, so the 6.12 line builds in a copy of the tree, .build/6.12/, synced before each
# build (rsync keeps the times, so kbuild rebuilds only what changed); the tests of a 6.12 VM
# run from that copy, and a make inside the copy builds there.
BUILD_TREE := $(shell KERNEL=$(KERNEL) bash -c '. $(SCRIPTS)/lib.sh && module_tree $(REPO)')
ifeq ($(BUILD_TREE),$(REPO))
SYNC_TREE := true
else
SYNC_TREE := bash $(SCRIPTS)/sync-tree.sh $(BUILD_TREE)
endif

KMAKE = $(MAKE) -C "$$kdir" M=$(BUILD_TREE) LLVM=$(LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) \
	CLIPPY_DRIVER=$(CLIPPY_DRIVER) LIBCLANG_PATH=/usr/lib/llvm$(LLVM)/lib

.PHONY: all modules clippy run check stress clean setup test-progs modules_install modules_uninstall \
	rustfmt rustfmtcheck

all: modules

setup:
	@bash $(SCRIPTS)/setup.sh

modules: setup
	@kdir=$(KDIR_CMD) && $(SYNC_TREE) && $(KMAKE) modules && \
	bash $(SCRIPTS)/check-exports.sh "$$kdir" $(BUILD_TREE)

# Rebuild our objects under clippy-driver; warnings from our code fail the target.
clippy: setup
	@kdir=$(KDIR_CMD) && $(KMAKE) clean >/dev/null && \
	$(KMAKE) CLIPPY=1 modules 2>&1 | tee $(REPO)/.clippy.log && \
	! grep -E '^(warning|error)' $(REPO)/.clippy.log

# Every tracked Rust file but the layout generator's sample input, which is bindgen's format.
RUSTFMT := /usr/bin/rustfmt
RUST_SOURCES = cd $(REPO) && git ls-files -z '*.rs' ':!:tests/host/gen_layout/*'

rustfmt: setup
	@$(RUST_SOURCES) | xargs -0 $(RUSTFMT)

rustfmtcheck: setup
	@$(RUST_SOURCES) | xargs -0 $(RUSTFMT) --check

run: modules
	@bash $(SCRIPTS)/run-main.sh

check: modules test-progs
	@bash $(REPO)/tests/check.sh

# The stress suite alone, as a soak: its results in .test-results/stress/.
DURATION ?= 60
stress: modules test-progs
	@RDMAVT_RS_TESTS=stress RDMAVT_RS_STRESS_DURATION=$(DURATION) \
		RDMAVT_RS_RESULTS=$(REPO)/.test-results/stress bash $(REPO)/tests/check.sh

# The differential fuzzer alone, more seeds: its results in .test-results/fuzz.
SEEDS ?= 100
STEPS ?= 80
fuzz: modules test-progs
	@RDMAVT_RS_TESTS=fuzz RDMAVT_RS_FUZZ_SEEDS="$$(seq -s ' ' 1 $(SEEDS))" \
		RDMAVT_RS_FUZZ_STEPS=$(STEPS) RDMAVT_RS_RESULTS=$(REPO)/.test-results/fuzz \
		bash $(REPO)/tests/check.sh

test-progs: setup
	@$(MAKE) -s -C $(REPO)/tests/progs OUT=$(REPO)/.test-bin

# Only installs, as kbuild's modules_install does: build first.
modules_install modules_uninstall:
	@KDIR=$(KDIR) INSTALL_MOD_PATH=$(INSTALL_MOD_PATH) bash $(SCRIPTS)/modules.sh $(@:modules_%=%)

clean:
	@kdir=$$(readlink -f $(CACHE_ROOT)/kernel/current); \
	if [ -d "$$kdir" ]; then $(KMAKE) clean; fi
	@rm -f .clippy.log
	@rm -rf .test-bin

# perftest on rdmavt-rs, the C rdmavt, rxe and siw side by side, on the benchmark kernel (a
# separate build without the debug options, -O2; scripts/bench.sh). Reports speed, never
# judges it. The BENCH_* settings reach scripts/setup.sh and scripts/bench.sh through the
# environment (make exports variables given on its command line).
.PHONY: bench bench-quick profile
bench: setup
	@bash $(SCRIPTS)/bench.sh $(BENCH_PROVIDERS)
bench-quick: setup
	@BENCH_QUICK=1 bash $(SCRIPTS)/bench.sh $(BENCH_PROVIDERS)
# perf record in the guest during ib_send_bw at 64 B and ib_write_bw at 64 KiB, on rdmavt-rs
# and the C rdmavt, then their instructions and calls per message counted by a QEMU plugin;
# the side-by-side summary in docs/perf.md. BENCH_PROFILE=insn: the counting alone.
profile: setup
	@BENCH_PROFILE=$${BENCH_PROFILE:-1} bash $(SCRIPTS)/bench.sh $(BENCH_PROVIDERS)
