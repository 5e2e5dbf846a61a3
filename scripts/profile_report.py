#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The profile's summary (`make profile`): where each provider's CPU time goes per message, side
by side, from the raw output of scripts/bench-guest.sh in profile mode.

    profile_report.py [--title TEXT] [--commit REV] RAW_DIR PROVIDER...

RAW_DIR/PROVIDER/1/ holds one boot: kallsyms.gz (the guest's text symbols, modules with their
load addresses), and for each profiled point NAME, NAME.perf.gz (a line of sampling
parameters, then perf script's samples: the task, then the call chain's addresses, leaf first),
NAME.client (perftest's output: the message rate) and NAME.cmd; RAW_DIR/PROVIDER/insn/ the
counting boot: its kallsyms.gz, the plugin's dumps insn.N, insn.order, and the rdmavt.ko it
loaded, whose listing (`objdump -d`) sorts the counted instructions by kind. Markdown on stdout.

Under QEMU TCG the guest has no PMU: perf samples with the cpu-clock timer, whose interrupt
cannot land while interrupts are off. A tick that falls due in a section that runs with
interrupts off (a spin_lock_irqsave section: most of rdmavt's data path) is taken where they
come back on, in the unlock. So a sample whose leaf is such an unlock is given to the function
that ended the section (the first caller that is not a lock wrapper), marked "(irqs off)":
the time was spent in its section, not in the unlock.
"""

import argparse
import bisect
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402  (the perftest output parser, shared with make bench)

LABELS = bench_report.LABELS
# What an idle vCPU runs: not part of any message's cost.
IDLE = {"pv_native_safe_halt", "native_safe_halt", "default_idle", "default_idle_call",
        "cpuidle_idle_call", "do_idle", "poll_idle", "acpi_idle_do_entry", "arch_cpu_idle"}
# Where interrupts come back on: a sample here stands for time in the section it ends.
IRQ_ON = re.compile(r"^_raw_spin_unlock_irq(restore|_enable)?$|^_raw_(read|write)_unlock_irq"
                    r"(restore)?$|^__local_bh_enable_ip$|^finish_task_switch")
# The wrappers between a section's owner and the unlock, skipped on the way up.
WRAPPER = re.compile(r"^(rust_helper_|_raw_spin_unlock|_raw_(read|write)_unlock|spin_unlock"
                     r"|__raw_spin_unlock|local_irq_restore|finish_task_switch)")
# Our modules, whose functions get an inclusive count.
OURS = {"rdmavt", "rvt_loop"}
TOP = 25
HEAD_RE = re.compile(r"^frequency: (\d+) Hz, seconds: (\d+), CPUs: (\d+)")
KERNEL_BASE = 0xffff800000000000


def demangle(names):
    """Rust's (v0) symbol names demangled by binutils' c++filt, without the crates' hashes
    (`rdmavt_rs::qp::send::post_send`); as they were without c++filt."""
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {}
    if len(out) != len(names):
        return {}
    return {n: re.sub(r"\[[0-9a-f]+\]", "", d) for n, d in zip(names, out)}


class Symbols:
    """The guest's kallsyms: an address to (module, function); `named` maps a symbol's raw
    (mangled) name to its (address, module), the first of that name."""

    def __init__(self, text):
        rows = []
        self.named = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) < 3:
                continue
            mod = f[3].strip("[]") if len(f) > 3 else "vmlinux"
            at = int(f[0], 16)
            rows.append((at, f[2], mod))
            self.named.setdefault(f[2], (at, mod))
        rows.sort()
        names = demangle([r[1] for r in rows if r[1].startswith("_R")])
        self.rows = [(a, names.get(n, n), m) for a, n, m in rows]
        self.addrs = [r[0] for r in rows]

    def lookup(self, ip):
        return self.at(ip)[:2]

    def at(self, ip):
        """(module, function, the function's first address)."""
        i = bisect.bisect_right(self.addrs, ip) - 1
        if i < 0:
            return ("?", hex(ip), None)
        return (self.rows[i][2], self.rows[i][1], self.addrs[i])


class Profile:
    """One point's samples in one boot, resolved and attributed."""

    def __init__(self, text, syms, client):
        self.hz = self.seconds = self.cpus = None
        self.samples, self.idle, self.user = 0, 0, 0
        self.self_ = {}      # (module, function) -> samples
        self.modules = {}    # module -> samples (attributed)
        self.inclusive = {}  # (module, function) of ours -> samples
        chain = []
        for line in text.splitlines() + [""]:
            m = HEAD_RE.match(line)
            if m:
                self.hz, self.seconds, self.cpus = (int(g) for g in m.groups())
                continue
            s = line.strip()
            if line[:1].isspace() and s:
                try:
                    chain.append(int(s.split()[0], 16))
                except ValueError:
                    pass
                continue
            if chain:
                self.add(chain, syms)
            chain = []
        size, vals = bench_report.parse(client or "")
        bw = vals.get(bench_report.BW)
        self.rate = bw * (1 << 20) / size if bw and size else None

    def add(self, chain, syms):
        self.samples += 1
        if chain[0] < KERNEL_BASE:
            self.user += 1
            return
        frames = [syms.lookup(ip) for ip in chain if ip >= KERNEL_BASE]
        leaf = frames[0]
        if leaf[1] in IDLE:
            self.idle += 1
            return
        key = leaf
        if IRQ_ON.match(leaf[1]):
            owner = next((f for f in frames[1:] if not WRAPPER.match(f[1])), None)
            if owner is not None:
                key = (owner[0], owner[1] + " (irqs off)")
        self.self_[key] = self.self_.get(key, 0) + 1
        self.modules[key[0]] = self.modules.get(key[0], 0) + 1
        for f in set(frames):
            if f[0] in OURS:
                self.inclusive[f] = self.inclusive.get(f, 0) + 1

    @property
    def usable(self):
        return self.samples > 0 and self.rate and self.cpus

    def us_per_msg(self, n):
        """The CPU microseconds per message that N samples stand for: their share of all
        samples, of both vCPUs' time, divided by the messages sent meanwhile."""
        return n / self.samples * self.cpus * 1e6 / self.rate


def load(raw, provider, name):
    d = os.path.join(raw, provider, "1")
    try:
        with gzip.open(os.path.join(d, name + ".perf.gz"), "rt", errors="replace") as f:
            text = f.read()
        with gzip.open(os.path.join(d, "kallsyms.gz"), "rt", errors="replace") as f:
            syms = Symbols(f.read())
    except OSError:
        return None
    return Profile(text, syms, bench_report.read(os.path.join(d, name + ".client")))


class Counts:
    """One point's instruction counts from a counting boot (RAW/PROVIDER/insn): the
    difference between its two runs, per message of the difference. `insns` and `calls` map
    (module, function) to instructions executed in it and calls of it (executions of its first
    instruction) per message; `modules` maps a module to its instructions per message, `at` an
    instruction's address to its executions per message."""

    def __init__(self, d, name, syms):
        runs = []
        with open(os.path.join(d, "insn.order")) as f:
            for k, line in enumerate(f, 1):
                n, iters = line.split()
                if n == name:
                    runs.append((int(iters), k))
        if len(runs) != 2 or runs[1][0] <= runs[0][0]:
            raise ValueError(f"{name}: not two counted runs")
        (small, k0), (large, k1) = runs
        a, b = (self.dump(os.path.join(d, f"insn.{k}")) for k in (k0, k1))
        self.msgs = large - small
        self.syms = syms
        self.user = (b.pop("user", 0) - a.pop("user", 0)) / self.msgs
        self.insns, self.calls, self.modules, self.at = {}, {}, {}, {}
        for addr in set(a) | set(b):
            n = (b.get(addr, 0) - a.get(addr, 0)) / self.msgs
            self.at[addr] = n
            mod, fn, start = syms.at(addr)
            key = (mod, fn)
            self.insns[key] = self.insns.get(key, 0) + n
            self.modules[mod] = self.modules.get(mod, 0) + n
            if addr == start:
                self.calls[key] = self.calls.get(key, 0) + n
        self.kernel = sum(self.modules.values())

    @staticmethod
    def dump(path):
        """A dump's counts by address. An address can be in several lines: QEMU translates
        a piece of code into more than one block when jumps enter it at different places (a
        loop's body is a block of its own as well as part of the block that falls into it),
        and each block counts the executions that went through it; so they add up."""
        counts = {}
        with open(path) as f:
            for line in f:
                k, v = line.split()
                k = "user" if k == "user" else int(k, 16)
                counts[k] = counts.get(k, 0) + int(v)
        return counts


# A branch's relocation in objdump -dr: the symbol (or section) and the addend.
RELOC_RE = re.compile(r"^\s*[0-9a-f]+:\s+R_X86_64_(?:PLT32|PC32)\s+([^\s+-]+)([+-]0x[0-9a-f]+)?$")
INSN_RE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")
FUNC_RE = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
SECTION_RE = re.compile(r"^Disassembly of section (\S+):$")
PAGE = 4096


def listing(ko):
    """The code of the module file KO, by `objdump -dr`: [(section, symbol, the symbol's offset,
    the instruction's offset, its text, its branch relocation (target, addend) or None)], in
    order; None without objdump or the file."""
    try:
        out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", ko], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    insns, section, sym, base = [], None, None, 0
    for line in out.splitlines():
        m = SECTION_RE.match(line)
        if m:
            section, sym = m.group(1), None
            continue
        m = FUNC_RE.match(line)
        if m:
            sym, base = m.group(2), int(m.group(1), 16)
            continue
        m = RELOC_RE.match(line)
        if m and insns:
            insns[-1] = insns[-1][:5] + ((m.group(1), int(m.group(2) or "0", 16)),)
            continue
        m = INSN_RE.match(line)
        if m and sym:
            insns.append((section, sym, base, int(m.group(1), 16), m.group(2), None))
    return insns


def kinds(text):
    """What an instruction (AT&T syntax) does, of what the mix counts: "mem" (a memory
    operand, push or pop: a load or a store), "stack" (one on the stack), "branch" (a
    conditional jump), "jump", "call"."""
    op = text.split()[0]
    out = set()
    if op.startswith(("push", "pop")):
        out |= {"mem", "stack"}
    elif "(" in text and not op.startswith(("lea", "nop")):
        out.add("mem")
        if "(%rsp" in text or "(%rbp" in text:
            out.add("stack")
    if op.startswith("call"):
        out.add("call")
    elif op.startswith("jmp"):
        out.add("jump")
    elif op.startswith("j"):
        out.add("branch")
    return out


def mix(counts, ko, module="rdmavt"):
    """MODULE's instructions per message by kind, from COUNTS (a `Counts`, with the counting
    boot's symbols) and KO, the module file the boot loaded: a dict of
    "insns", "mem", "stack", "branch", "call" and "far" (jumps, calls and taken branches whose
    target is on another 4 KiB page than the instruction: QEMU 7.2 links translated blocks
    directly only within a page, so each of these goes through a lookup of the next block).
    A conditional branch counts as taken as often as it ran more than the next instruction did
    (at least that often: the next one may be a target as well). None without the listing."""
    code = listing(ko)
    if not code:
        return None
    addr = {name: at for name, (at, _) in counts.syms.named.items()}
    ours = {name: at for name, (at, mod) in counts.syms.named.items() if mod == module}
    # Where each of the module's sections starts, by one of its functions.
    sections = {}
    for section, sym, base, _, _, _ in code:
        if sym in ours and section not in sections:
            sections[section] = ours[sym] - base
    total = dict.fromkeys(("insns", "mem", "stack", "branch", "call", "far"), 0.0)
    for i, (section, sym, base, off, text, reloc) in enumerate(code):
        if section not in sections:
            continue
        at = sections[section] + off
        n = counts.at.get(at, 0.0)
        if n == 0:
            continue
        k = kinds(text)
        total["insns"] += n
        for kind in k & {"mem", "stack", "branch", "call"}:
            total[kind] += n
        if not k & {"branch", "jump", "call"} or "*" in text:
            continue
        target = branch_target(text, reloc, addr, sections, section)
        if target is None:
            continue
        taken = n
        if "branch" in k:
            after = code[i + 1] if i + 1 < len(code) else None
            later = counts.at.get(sections[section] + after[3], 0.0) if after else 0.0
            taken = max(0.0, n - later)
        if target // PAGE != at // PAGE:
            total["far"] += max(0.0, taken)
    return total


def branch_target(text, reloc, addr, sections, section):
    """The address a direct jump or call goes to: through its relocation (to a symbol, or to
    a section of the module plus an offset) or, without one, the listing's offset in its own
    section. None when it cannot be told."""
    if reloc:
        name, addend = reloc
        start = addr.get(name, sections.get(name))
        # PC-relative: the target is S + A + 4 (the field is the instruction's last 4 bytes).
        return None if start is None else start + addend + 4
    m = re.match(r"^\S+\s+([0-9a-f]+)\b", text)
    return sections[section] + int(m.group(1), 16) if m else None


def load_mix(raw, provider, counts):
    """[`mix`] of a counting boot's COUNTS, with the rdmavt.ko that boot loaded (RAW/PROVIDER/
    insn/rdmavt.ko, a copy scripts/bench.sh keeps); None without it."""
    ko = os.path.join(raw, provider, "insn", "rdmavt.ko")
    if counts is None or not os.path.exists(ko):
        return None
    return mix(counts, ko)


def load_counts(raw, provider, name):
    d = os.path.join(raw, provider, "insn")
    try:
        with gzip.open(os.path.join(d, "kallsyms.gz"), "rt", errors="replace") as f:
            syms = Symbols(f.read())
        return Counts(d, name, syms)
    except (OSError, ValueError):
        return None


def counted_points(raw, providers):
    names = []
    for p in providers:
        try:
            with open(os.path.join(raw, p, "insn", "insn.order")) as f:
                for line in f:
                    n = line.split()[0]
                    if n not in names:
                        names.append(n)
        except OSError:
            pass
    return names


def present(providers, data, why):
    """The providers that have DATA, their labels, and a line saying WHY for each other."""
    good = [p for p in providers if data[p]]
    missing = [line for p in providers if p not in good
               for line in (f"{LABELS.get(p, p)}: {why}", "")]
    return good, [LABELS.get(p, p) for p in good], missing


def n(v):
    """A count per message."""
    return "-" if v is None else f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}"


def before_counts(before, name, providers):
    """The counts of an earlier profile (BEFORE: its raw directory and the tree it was taken
    at) for the same point, keyed "PROVIDER@before", with their column labels."""
    if not before:
        return {}, {}
    raw, commit = before
    cs = {f"{p}@before": load_counts(raw, p, name) for p in providers}
    cs = {k: c for k, c in cs.items() if c}
    return cs, {k: f"{LABELS.get(k[:-7], k[:-7])} at {commit}" for k in cs}


def polls(v):
    """User-space instructions per message. perftest's polling does not grow with the
    messages at every point (at 64 KiB a shorter run can poll more than a longer one), so the
    difference of two runs can come out negative: no count then, and the reason."""
    return n(v) if v >= 0 else "- (the shorter run polled more)"


def count_section(raw, name, providers, before=None):
    cs = {p: load_counts(raw, p, name) for p in providers}
    good, labels, missing = present(providers, cs, "no counts (see its insn/vm.log).")
    out = [f"## {name}: instructions and calls per message", ""] + missing
    if not good:
        return out
    # The totals and the modules also show the earlier profile's counts, first.
    earlier, earlier_labels = before_counts(before, name, good)
    cs.update(earlier)
    cols = list(earlier) + good
    col_labels = [earlier_labels[k] for k in earlier] + labels

    def total(p, pred, attr="calls"):
        return sum(v for k, v in getattr(cs[p], attr).items() if pred(k))

    out += table(f"Per message (the difference of two runs, {cs[good[0]].msgs:,} messages "
                 "apart):",
                 [""] + col_labels, [
                     ["kernel instructions"] + [n(cs[p].kernel) for p in cols],
                     ["user-space instructions (perftest polls: time, not cost)"] + [
                         polls(cs[p].user) for p in cols],
                     ["kernel function calls"] + [n(total(p, lambda k: True)) for p in cols],
                     ["calls into rdmavt and rvt_loop"] + [
                         n(total(p, lambda k: k[0] in OURS)) for p in cols],
                     ["calls of `rust_helper_*`"] + [
                         n(total(p, lambda k: k[1].startswith("rust_helper_"))) for p in cols],
                 ])
    mods = sorted({m for p in cols for m in cs[p].modules},
                  key=lambda m: -max(cs[p].modules.get(m, 0) for p in cols))[:6]
    out += table("Kernel instructions per message by module:", ["module"] + col_labels,
                 [[m] + [n(cs[p].modules.get(m)) for p in cols] for m in mods])
    out += mix_table(raw, before, cs, cols, col_labels)
    head = ["function", "module"] + [f"{lab} {what}" for lab in labels
                                     for what in ("insns", "calls")]

    def rows(keys):
        return [[f"`{f}`", m] + [x for p in good for x in (
            n(cs[p].insns.get((m, f))), n(cs[p].calls.get((m, f))))] for m, f in keys]

    def busiest(attr, top, pred=lambda k: True):
        return ranked(cs, good, attr, top, pred, least=0.5)

    out += table(f"The kernel functions that execute the most instructions (the {TOP} of "
                 "each), per message, with their calls:", head, rows(busiest("insns", TOP)))
    out += table(f"The most called kernel functions (the {TOP} of each), per message:", head,
                 rows(busiest("calls", TOP)))
    out += table("rdmavt's and rvt_loop's functions, per message (each called at least once "
                 "every two messages):", head,
                 rows(busiest("calls", 1000, lambda k: k[0] in OURS)))
    return out


def mix_table(raw, before, cs, cols, col_labels):
    """rdmavt's instructions per message by kind, for the columns whose boot kept its
    rdmavt.ko; nothing when none did."""
    mixes = {p: load_mix(before[0] if p.endswith("@before") else raw,
                         p.split("@")[0], cs[p]) for p in cols} if before else {
        p: load_mix(raw, p, cs[p]) for p in cols}
    shown = [(p, label) for p, label in zip(cols, col_labels) if mixes[p]]
    if not shown:
        return []

    def row(label, kind):
        return [label] + [n(mixes[p][kind]) for p, _ in shown]

    return table("rdmavt's instructions per message by kind (each counted instruction looked "
                 "up in the listing of the rdmavt.ko its boot loaded, `objdump -d`; a profile "
                 "that kept no rdmavt.ko has no column):",
                 ["rdmavt"] + [label for _, label in shown], [
                     row("instructions", "insns"),
                     row("loads and stores (a memory operand, push, pop)", "mem"),
                     row("of them on the stack", "stack"),
                     row("conditional branches", "branch"),
                     row("calls", "call"),
                     row("jumps, calls and taken branches to another 4 KiB page (QEMU chains "
                         "blocks only within a page)", "far"),
                 ])


def points(raw, providers):
    names = []
    for p in providers:
        d = os.path.join(raw, p, "1")
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.endswith(".perf.gz") and f[:-8] not in names:
                names.append(f[:-8])
    return names


def us(v):
    return "-" if v is None else f"{v:.1f}" if v >= 1 else f"{v:.2f}"


def table(title, head, rows):
    return [title, "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)] + \
        ["| " + " | ".join(r) + " |" for r in rows] + [""]


def ranked(profs, good, attr, top, pred=lambda k: True, least=None):
    """The keys of ATTR (a dict of each profile) among the TOP of any provider, busiest
    first; only those PRED accepts, and with LEAST, only those at least that big."""
    keys = []
    for p in good:
        d = getattr(profs[p], attr)
        for k in sorted((k for k in d if pred(k)), key=lambda k: -d[k])[:top]:
            if k not in keys and (least is None or d[k] >= least):
                keys.append(k)
    keys.sort(key=lambda k: -max(getattr(profs[p], attr).get(k, 0) for p in good))
    return keys


def cells(profs, good, attr, key):
    return [us(profs[p].us_per_msg(getattr(profs[p], attr)[key]))
            if key in getattr(profs[p], attr) else "-" for p in good]


def section(raw, name, providers):
    profs = {p: load(raw, p, name) for p in providers}
    cmd = next((c for c in (bench_report.read(os.path.join(raw, p, "1", name + ".cmd"))
                            for p in providers) if c), "")
    usable = {p: profs[p] if profs[p] and profs[p].usable else None for p in providers}
    good, labels, missing = present(providers, usable,
                                    f"no usable profile (see its {name}.perf.log).")
    out = [f"## {name}", "", f"`{cmd.strip()}`", ""] + missing
    if not good:
        return out
    kern = {p: profs[p].samples - profs[p].idle - profs[p].user for p in good}
    out += table("Per message, CPU microseconds (both vCPUs):", [""] + labels, [
        ["messages per second"] + [f"{profs[p].rate:,.0f}" for p in good],
        ["samples (idle, user space)"] + [
            f"{profs[p].samples} ({profs[p].idle}, {profs[p].user})" for p in good],
        ["kernel"] + [us(profs[p].us_per_msg(kern[p])) for p in good],
        ["user space (perftest polling, the provider library)"] + [
            us(profs[p].us_per_msg(profs[p].user)) for p in good],
        ["idle"] + [us(profs[p].us_per_msg(profs[p].idle)) for p in good],
    ])
    mods = ranked(profs, good, "modules", 6)
    out += table("Kernel time by module (samples in an interrupts-off section given to its "
                 "owner), microseconds per message:", ["module"] + labels,
                 [[m] + cells(profs, good, "modules", m) for m in mods])
    keys = ranked(profs, good, "self_", TOP)
    out += table(f"The busiest kernel functions, self time (the {TOP} of each), microseconds "
                 "per message; \"(irqs off)\": the function's interrupts-off sections:",
                 ["function", "module"] + labels,
                 [[f"`{f}`", m] + cells(profs, good, "self_", (m, f)) for m, f in keys])
    keys = ranked(profs, good, "inclusive", 15)
    out += table("rdmavt's and rvt_loop's functions, inclusive (with what they call), "
                 "microseconds per message:", ["function", "module"] + labels,
                 [[f"`{f}`", m] + cells(profs, good, "inclusive", (m, f)) for m, f in keys])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", default="", help="the kernel and helpers profiled")
    ap.add_argument("--commit", default="", help="the tree profiled")
    ap.add_argument("--before", nargs=2, metavar=("RAW", "COMMIT"),
                    help="an earlier profile's raw directory and the tree it profiled: its "
                    "counts beside these")
    ap.add_argument("raw")
    ap.add_argument("providers", nargs="+")
    args = ap.parse_args()
    lines = [
        "# Where the time goes: a profile per message", "",
        "Generated by `make profile` (`scripts/bench.sh` with `BENCH_PROFILE=1`, then "
        "`scripts/profile_report.py`); do not edit. "
        f"{args.title} QEMU TCG, 2 vCPUs, at {args.commit}.", "",
        "In one boot per provider, each point runs for 8 seconds; from 2 seconds after its "
        "client starts, `perf record -a -g` samples the whole guest for 4 seconds (cpu-clock: "
        "TCG has no PMU), and the host resolves the call chains with the guest's kallsyms. A "
        "function's share of the samples becomes CPU microseconds per message: that share of "
        "both vCPUs' time, divided by the messages sent meanwhile (perftest's average rate). "
        "Sender and receiver run in the same guest and rvt_loop copies in the sender's context, "
        "so the numbers are the whole loopback's cost of a message, both sides. The timer "
        "cannot interrupt code that runs with interrupts off: its samples land where they come "
        "back on, and are given to the function whose section it was (\"(irqs off)\").", "",
        "Then one counting boot per provider, without perf: QEMU runs the plugin "
        "`scripts/bench/insn-count.c`, which counts how often each kernel instruction executes "
        "between two marks the guest sets around a run. Each point runs twice, with two "
        "iteration counts (`-n`); the difference of the two runs, divided by the difference "
        "of their messages, is the instructions and the calls (executions of a function's first "
        "instruction) of one message, both sides, without the set-up both runs share (an "
        "uncounted run before them warms the caches). These see "
        "inside interrupts-off sections, where the samples cannot; an instruction is not a "
        "unit of time (a `rep movs` copy is one), but under TCG each costs about alike.", "",
        "The counting boot keeps the rdmavt.ko it loaded, and each point's counts then sort "
        "rdmavt's instructions by kind, looked up in that file's listing: loads and stores, "
        "branches, calls, and the jumps, calls and taken branches to another 4 KiB page. Under "
        "TCG a load or a store costs more than an instruction without one (the guest's memory "
        "is reached through QEMU's software TLB), and QEMU 7.2 links translated blocks "
        "directly only within a page: a transfer to another page looks the next block up.", ""]
    if args.before:
        lines += [f"The count tables' first columns are an earlier profile's, at {args.before[1]} "
                  "(`BENCH_PROFILE_BEFORE`): before and after.", ""]
    for name in points(args.raw, args.providers):
        lines += section(args.raw, name, args.providers)
    for name in counted_points(args.raw, args.providers):
        lines += count_section(args.raw, name, args.providers, args.before)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
