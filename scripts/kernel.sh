#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds the rdmavt-rs test kernel into the cache and prints its build directory.
#
#   scripts/kernel.sh            the test kernel (scripts/kconfig/rdmavt-rs.config)
#   scripts/kernel.sh --bench    the benchmark kernel: the same fragment, then
#                                scripts/kconfig/bench.config (no KASAN, lockdep, kmemleak,
#                                UBSAN, KUnit), in its own cache directory
#   scripts/kernel.sh --bench-inline    the benchmark kernel built with clang-22, the LLVM of
#                                rustc-web, and CONFIG_RUST_INLINE_HELPERS (which needs clang
#                                and rustc on one LLVM major version), in its own cache
#                                directory too; modules for it need LLVM=-22
#
# The cache key is the kernel version, the hash of the config fragment and the toolchain
# versions, so a matching build is reused as it is and any change gets a fresh one. A build
# directory only counts once its `.rdmavt-rs-built` stamp exists: an interrupted build is
# resumed, never mistaken for a finished one.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib.sh"

fragment=$here/kconfig/rdmavt-rs.config
# The fragments merged in order, later ones winning; the benchmark kernel adds its own.
fragments=("$fragment")
variant=
case "${1:-}" in
"") ;;
--bench) fragments+=("$here/kconfig/bench.config"); variant=bench- ;;
--bench-inline)
	fragments+=("$here/kconfig/bench.config" "$here/bench/inline-helpers.config")
	variant=bench-inline-
	LLVM_SUFFIX=-22
	# setup.sh installs clang-22 and its friends only when asked.
	export BENCH_HELPERS=inline ;;
*) die "usage: kernel.sh [--bench|--bench-inline]" ;;
esac

cache_key() {
	{
		echo "$KERNEL_VERSION"
		cat "${fragments[@]}"
		"$RUSTC_DEBIAN" --version
		"clang$LLVM_SUFFIX" --version | head -1
		"$BINDGEN" --version
	} | sha256sum | cut -c1-12
}

# The Debian package that carries the source: the pinned copy beside the checkout when it is
# there (checksum verified), otherwise downloaded by name from trixie-backports through a
# private apt configuration that leaves the system's sources alone.
fetch_source_deb() {
	local pinned=$repo/../shared/kernel
	local deb
	deb=$(ls "$pinned"/${KERNEL_PKG}_*_all.deb 2>/dev/null | head -1 || true)
	if [ -n "$deb" ] && (cd "$pinned" && sha256sum --quiet -c SHA256SUMS) >&2; then
		echo "$deb"
		return
	fi
	local dl=$CACHE_ROOT/deb
	deb=$(ls "$dl"/${KERNEL_PKG}_${KERNEL_VERSION}-*_all.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		log "downloading $KERNEL_PKG from trixie-backports"
		download_with_private_apt "$dl"
		deb=$(ls "$dl"/${KERNEL_PKG}_${KERNEL_VERSION}-*_all.deb 2>/dev/null | head -1 || true)
		[ -n "$deb" ] || die "$KERNEL_PKG $KERNEL_VERSION not found in trixie-backports"
	fi
	echo "$deb"
}

download_with_private_apt() {
	local dl=$1 apt=$CACHE_ROOT/apt
	# Reuse the mirror the system already uses for Debian; only the suite differs.
	local mirror
	mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null ||
		true)
	[ -n "$mirror" ] || mirror=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list)
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$dl"
	echo "deb $mirror trixie-backports main" >"$apt/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=-"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
		-o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
	apt-get -q "${opts[@]}" update >/dev/null
	(cd "$dl" && apt-get -q "${opts[@]}" download "$KERNEL_PKG" >/dev/null)
}

unpack_source() {
	local deb=$1 dir=$2
	log "unpacking $(basename "$deb")"
	rm -rf "$dir.unpack"
	mkdir -p "$dir.unpack"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$dir.unpack" --wildcards "./usr/src/${KERNEL_PKG}.tar.xz"
	mkdir -p "$dir"
	tar -xJ -f "$dir.unpack/usr/src/${KERNEL_PKG}.tar.xz" -C "$dir" --strip-components=1
	rm -rf "$dir.unpack"
}

kmake() {
	make -C "$kdir" LLVM="$LLVM_SUFFIX" RUSTC="$RUSTC_DEBIAN" BINDGEN="$BINDGEN" \
		LIBCLANG_PATH=/usr/lib/llvm${LLVM_SUFFIX}/lib "$@"
}

# Each option's line from the last fragment that sets it: what the .config must show.
effective_fragment() {
	awk '/^CONFIG_/ { o = $0; sub(/=.*/, "", o) }
		/^# CONFIG_.* is not set$/ { o = $2 }
		o != "" { if (!(o in v)) order[n++] = o; v[o] = $0; o = "" }
		END { for (i = 0; i < n; i++) print v[order[i]] }' "${fragments[@]}"
}

# tinyconfig, then the fragments, then a check that every option of the fragment survived
# olddefconfig: a dependency that silently drops RUST or KASAN must stop the build.
configure() {
	kmake -s tinyconfig >/dev/null
	(cd "$kdir" && scripts/kconfig/merge_config.sh -m .config "${fragments[@]}" >/dev/null)
	kmake -s olddefconfig >/dev/null
	local bad=0 line opt want
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			opt=${line%%=*}
			grep -qx "$line" "$kdir/.config" || { log "config: $line did not stick"; bad=1; } ;;
		"# CONFIG_"*" is not set")
			opt=${line#\# }; opt=${opt%% *}
			if grep -q "^$opt=" "$kdir/.config"; then log "config: $opt is set"; bad=1; fi ;;
		esac
	done < <(effective_fragment)
	[ "$bad" = 0 ] || die "kernel config does not match the fragment"
	kmake -s rustavailable >/dev/null || die "the kernel does not accept the Rust toolchain"
}

# The full build with a progress line every minute (CI logs show it is alive and how far).
build() {
	local logf=$kdir/.rdmavt-rs-build.log start=$SECONDS
	log "building kernel $KERNEL_VERSION in $kdir (log: $logf)"
	kmake -j"$(nproc)" bzImage modules >"$logf" 2>&1 &
	local pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 60 &
		wait $! || true
		kill -0 "$pid" 2>/dev/null || break
		log "kernel build: $(( (SECONDS - start) / 60 )) min, $(grep -c '^  [A-Z]' "$logf") steps"
	done
	if ! wait "$pid"; then
		tail -40 "$logf" >&2
		die "kernel build failed"
	fi
	log "kernel built in $(( (SECONDS - start) / 60 )) min"
}

main() {
	bash "$here/setup.sh"
	local key
	key=$(cache_key)
	kdir=$CACHE_ROOT/kernel/$KERNEL_VERSION-$variant$key
	# One build at a time: a second caller waits for the first and then reuses its result.
	mkdir -p "$CACHE_ROOT/kernel"
	# Each kernel has its own lock: a benchmark build never holds up the test kernel's users.
	exec 9>"$CACHE_ROOT/kernel/.lock${variant:+-${variant%-}}"
	flock 9
	if [ ! -f "$kdir/.rdmavt-rs-built" ]; then
		if [ ! -f "$kdir/Makefile" ]; then
			unpack_source "$(fetch_source_deb)" "$kdir"
		fi
		[ -f "$kdir/.config" ] && [ -f "$kdir/.rdmavt-rs-configured" ] || {
			configure
			touch "$kdir/.rdmavt-rs-configured"
		}
		build
		touch "$kdir/.rdmavt-rs-built"
	fi
	# `current` is the test kernel: the one `make`, the tests and the reference sources use.
	[ -n "$variant" ] || ln -sfn "$kdir" "$CACHE_ROOT/kernel/current"
	echo "$kdir"
}

main "$@"
