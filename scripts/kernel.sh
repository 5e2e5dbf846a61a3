#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Builds the rdmavt-rs test kernel into the cache and prints its build directory.
#
#   scripts/kernel.sh            the test kernel (scripts/kconfig/rdmavt-rs.config)
#   KERNEL=6.12 scripts/kernel.sh    the same for the 6.12 LTS line (Debian's
#                                linux-source-6.12 from bookworm-security; the fragment, then
#                                scripts/kconfig/kernel-6.12.config, which adds qib), and so
#                                on for --bench; its test kernel is cached as current-6.12
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
# The fragments merged in order, later ones winning; the 6.12 line and the benchmark kernel add
# their own.
fragments=("$fragment")
[ "$KERNEL_LINE" = 7.3 ] || fragments+=("$here/kconfig/kernel-$KERNEL_LINE.config")
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

# The Debian package that carries the source, pinned by version and checksum (lib.sh): the
# copy beside the checkout when it is there, otherwise one downloaded by name from its suite
# (trixie-backports for 7.3, bookworm-security for 6.12) through a private apt configuration
# that leaves the system's sources alone, or, once the suite has moved on to a newer version,
# straight from the suite's pool.
fetch_source_deb() {
	local name=${KERNEL_PKG}_${KERNEL_DEB_VERSION}_all.deb
	local deb
	for deb in "$repo/../shared/kernel/$name" "$CACHE_ROOT/deb/$name"; do
		if [ -f "$deb" ] && deb_ok "$deb"; then
			echo "$deb"
			return
		fi
	done
	local dl=$CACHE_ROOT/deb
	log "downloading $KERNEL_PKG $KERNEL_DEB_VERSION from $KERNEL_SUITE"
	download_with_private_apt "$dl" || download_from_pool "$dl" ||
		die "$KERNEL_PKG $KERNEL_DEB_VERSION could not be downloaded from $KERNEL_SUITE"
	deb_ok "$dl/$name" || die "$dl/$name does not have the recorded checksum"
	echo "$dl/$name"
}

deb_ok() {
	echo "$KERNEL_DEB_SHA256  $1" | sha256sum --quiet -c - >&2
}

# The Debian mirror the system already uses, for the suite's archive (debian or
# debian-security); only the suite differs.
suite_mirror() {
	local uri
	uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null ||
		true)
	[ -n "$uri" ] || uri=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
	case "$uri" in
	*/debian) echo "${uri%/debian}/$KERNEL_MIRROR_PATH" ;;
	*) echo "http://deb.debian.org/$KERNEL_MIRROR_PATH" ;;
	esac
}

download_with_private_apt() {
	local dl=$1 apt=$CACHE_ROOT/apt-$KERNEL_SUITE
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$dl"
	echo "deb $(suite_mirror) $KERNEL_SUITE main" >"$apt/sources.list"
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=-"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
		-o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
	apt-get -q "${opts[@]}" update >/dev/null &&
		(cd "$dl" && apt-get -q "${opts[@]}" download "$KERNEL_PKG=$KERNEL_DEB_VERSION" >/dev/null)
}

download_from_pool() {
	local dl=$1 src=${KERNEL_PKG#linux-source-}
	local pool=pool/main
	[ "$KERNEL_MIRROR_PATH" != debian-security ] || pool=pool/updates/main
	curl -fsSL -o "$dl/${KERNEL_PKG}_${KERNEL_DEB_VERSION}_all.deb" \
		"$(suite_mirror)/$pool/l/linux-$src/${KERNEL_PKG}_${KERNEL_DEB_VERSION}_all.deb"
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
	exec 9>"$CACHE_ROOT/kernel/.lock-$KERNEL_LINE${variant:+-${variant%-}}"
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
	# `current` is the test kernel: the one `make`, the tests and the reference sources use
	# (`current-6.12` for the 6.12 line).
	[ -n "$variant" ] || ln -sfn "$kdir" "$KERNEL_CURRENT"
	echo "$kdir"
}

main "$@"
