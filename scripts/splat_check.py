#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Splat detector: finds kernel error reports in a Linux guest's kernel log.

  splat_check.py [--known SIGS]... [FILE ...]    (no FILE, or "-": standard input)

A test boot must fail when the kernel reported a bug, even if every test passed: KASAN,
lockdep, UBSAN, kmemleak, WARN, BUG, Oops, panic, refcount_t and list corruption, hung tasks,
RCU stalls and soft lockups. Each report found is printed to stdout as

  splat: <kind>: <header line>
      during: <test>                  (when the log names the test that was running)
      <up to 15 following lines, without the unreliable "? func" stack entries>

Exit status: 0 when no report was found, 1 when one was, 2 on a usage error or an unreadable
file. Input is `dmesg` output, raw /dev/kmsg or `dmesg -r` records, journal lines or a serial
console capture; the timestamp and level prefixes are stripped before matching.

--known SIGS forgives the reports that match a signature in the file SIGS: each is noted on
stderr as "known:" and does not count. A signature is a kind on a line of its own, followed by
indented regular expressions that must match lines of the report (its header line and the
lines after it, up to KNOWN_WINDOW), in that order. Lines starting with "#" are comments.
Meant for bugs of the C rdmavt that the reference run cannot avoid (tests/splat-known-c) and
for reports that are no rdmavt's (tests/splat-known), never for our code.

Only the header lines that the kernel prints to open a report are matched, anchored at the
start of the message, so boot banners ("KernelAddressSanitizer initialized", "kmemleak: Kernel
memory leak detector initialized", "Kernel command line: ... panic=-1") and names that merely
contain "ubsan" or "BUG" do not count.
"""

import argparse
import re
import sys
from dataclasses import dataclass

CONTEXT_LINES = 15
# What tests/guest/run-suite.sh writes to the kernel log as each test starts, so that a report
# says which test was running when the kernel printed it.
TEST_MARKER = re.compile(r"^rdmavt-rs test: (\S+)")
# A stack entry the unwinder is not sure of ("? do_raw_spin_lock+0xc0/0x1e0"): noise in a
# report cut to a few lines, where the reliable entries are what tell the story.
UNRELIABLE_FRAME = re.compile(r"^\s*\? \S+\+0x")
# How far into a report a known signature may look: far enough for lockdep's lock names.
KNOWN_WINDOW = 40

# A report's header lines come close together ("cut here", then "WARNING: ..." two lines
# later; "BUG: kernel NULL pointer dereference", then "Oops: ..." four lines later), and every
# report then prints a CPU, register or stack dump far longer than this. So a line within this
# many lines of a report's last header line may belong to that report.
ABSORB_WINDOW = 8


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern
    # The kinds of report this line is also printed by, shortly after their own header (the
    # WARNING line after "refcount_t: underflow", the Oops line after "BUG: ..."). There it
    # belongs to that report; anywhere else it opens a report of its own.
    after: tuple = ()
    # "------------[ cut here ]------------" opens a report whose kind the next header line
    # tells: WARN, UBSAN, refcount_t, list corruption or BUG. Plain WARN when none follows.
    cut_here: bool = False


def _p(kind, regex, after=(), cut_here=False):
    return Pattern(kind, re.compile(regex), tuple(after), cut_here)


# The header lines, in order of precedence: the first match decides a line, so the specific
# "BUG: KASAN:" and "BUG: sleeping function ..." come before the generic "BUG: ". A Rust panic
# prints "cut here" and "kernel BUG at" after its own header, hence those after "bug".
PATTERNS = (
    _p("warn", r"^-+\[ cut here \]-+$", after=["bug"], cut_here=True),

    _p("kasan", r"^BUG: KASAN: "),
    # The second line of a general protection fault on a KASAN kernel.
    _p("kasan", r"^KASAN: [\w -]+ in range \[", after=["oops"]),

    # lockdep, and the might_sleep()/atomic checks that report alongside it.
    _p("lockdep", r"^WARNING: possible (circular locking dependency|recursive locking"
                  r"|irq lock inversion dependency) detected"),
    _p("lockdep", r"^WARNING: (inconsistent lock state|suspicious RCU usage|held lock freed!"
                  r"|lock held when returning to user space!|bad (unlock balance|contention) "
                  r"detected!|Nested lock was not taken|\S+-safe -> \S+-unsafe lock order "
                  r"detected|.* (still has locks held!|is leaving the kernel with locks still "
                  r"held!))"),
    _p("lockdep", r"^\[ BUG: Invalid wait context \]"),
    _p("lockdep", r"^BUG: (sleeping function called from invalid context|scheduling while "
                  r"atomic)"),

    _p("ubsan", r"^UBSAN: \S"),

    _p("kmemleak", r"^kmemleak: [1-9]\d* new suspected memory leaks?\b"),
    # Objects as /sys/kernel/debug/kmemleak lists them, or as kmemleak.verbose=1 logs them.
    _p("kmemleak", r"^(kmemleak: )?unreferenced object 0x[0-9a-f]+ \(size \d+\):"),

    _p("refcount", r"^refcount_t: (underflow|saturated|addition on 0|decrement hit 0)"),
    _p("list-corruption", r"^list_(add|del) corruption\b"),
    _p("list-corruption", r"^list_add double add\b"),

    _p("hung-task", r"^INFO: task .+ blocked for more than \d+ seconds"),
    _p("rcu-stall", r"^(rcu: )?INFO: rcu_\w+ (self-)?detected (expedited )?stalls?\b"),
    _p("soft-lockup", r"^watchdog: BUG: soft lockup\b"),

    # WARN, in the format before v6.19 ("WARNING: CPU: 0 PID: 1 at file:line func") and after
    # ("WARNING: file:line at func, CPU#0: comm/pid", "WARNING: at func, CPU#0: comm/pid").
    # refcount_t and list checks WARN after their own message.
    _p("warn", r"^WARNING: CPU: \d+ PID: \d+ at ", after=["refcount", "list-corruption"]),
    _p("warn", r"^WARNING: (\S+:\d+ )?at .*, CPU#\d+: ", after=["refcount", "list-corruption"]),

    # CONFIG_BUG_ON_DATA_CORRUPTION turns a list corruption into a BUG.
    _p("bug", r"^kernel BUG at \S+", after=["bug", "list-corruption"]),
    # A Rust panic: the panic handler logs this, then BUG()s.
    _p("bug", r"^rust_kernel: panicked at "),
    # SLUB debugging: "BUG kmalloc-64 (Not tainted): Poison overwritten".
    _p("bug", r"^BUG [\w.:-]+ \((Not tainted|Tainted: [^)]*)\): "),
    _p("bug", r"^BUG: "),

    # The die() header that follows a BUG, a page fault or a UBSAN trap: "Oops: 0000 [#1]",
    # "Oops: Oops: ...", "Oops: invalid opcode: 0000 [#1]", "Oops: general protection fault,
    # ...", and in older kernels "invalid opcode: 0000 [#1]" or "general protection fault: 0000".
    _p("oops", r"^Oops: ", after=["bug", "list-corruption", "ubsan"]),
    _p("oops", r"^general protection fault\b"),
    _p("oops", r"^[a-z][\w ,-]*: [0-9a-f]{4} \[#\d+\]", after=["bug", "list-corruption", "ubsan"]),

    # Anchored, so "---[ end Kernel panic - not syncing ... ]---" does not count twice.
    _p("panic", r"^Kernel panic - not syncing\b"),
)

# What may precede the message on a line, in any combination: "<4>" levels, "6,1234,5678,-;"
# /dev/kmsg records, "[   12.345678]" or "[Sat Apr 18 09:14:02 2026]" timestamps, "[  T123]"
# caller ids, syslog and ISO dates, "host kernel:" journal idents, "kern  :warn  :" facilities.
PREFIX = re.compile(r"""
    (?: <\d{1,3}>
      | \d+,\d+,\d+,[^;]*;
      | \[\s*\+?\d+\.\d+\]
      | \[[A-Z][a-z]{2}\ [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d\ \d{4}\]
      | \[\s*[TC]\d+\]
      | [A-Z][a-z]{2}\ [\ \d]\d\ \d\d:\d\d:\d\d
      | \d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?
      | (?:[\w.-]+\ )?kernel:
      | (?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7])\s*:
        (?:emerg|alert|crit|err|warn|notice|info|debug)\s*:
    )\ ?""", re.VERBOSE)

# Colour escapes that a serial console capture may carry.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Report:
    kind: str
    line: int           # index of the header line shown
    last: int           # index of the last header line that belongs to this report
    pending: bool       # opened by "cut here" and its kind not known yet


def strip_prefix(line):
    """The message of a log line, without its timestamp, level or journal prefixes."""
    line = ANSI_ESCAPE.sub("", line).rstrip()
    while True:
        m = PREFIX.match(line)
        if not m or not m.end():
            return line
        line = line[m.end():]


def classify(message):
    """The first pattern that matches the message, or None."""
    # The kernel never indents a header line; indentation is a console or capture artefact.
    text = message.lstrip()
    return next((p for p in PATTERNS if p.regex.match(text)), None)


def absorb(report, index, pattern):
    """Whether line `index`, matching `pattern`, continues `report`; updates it if so."""
    if report is None or index - report.last > ABSORB_WINDOW:
        return False
    if report.pending:
        # The line after "cut here" names the bug.
        if not pattern.cut_here:
            report.kind, report.line, report.pending = pattern.kind, index, False
    elif report.kind not in pattern.after:
        return False
    report.last = index
    return True


def find_reports(messages):
    """Every report in a list of messages, in order."""
    reports = []
    for index, message in enumerate(messages):
        pattern = classify(message)
        if pattern and not absorb(reports[-1] if reports else None, index, pattern):
            reports.append(Report(pattern.kind, index, index, pending=pattern.cut_here))
    return reports


def running_test(report, messages):
    """The test the log says was running when the report began, or None."""
    for message in reversed(messages[:report.line]):
        m = TEST_MARKER.match(message.lstrip())
        if m:
            return m.group(1)
    return None


def format_report(report, messages):
    lines = [f"splat: {report.kind}: {messages[report.line].strip()}"]
    test = running_test(report, messages)
    if test:
        lines.append(f"    during: {test}")
    context = (m for m in messages[report.line + 1:] if not UNRELIABLE_FRAME.match(m))
    lines += ["    " + message for message, _ in zip(context, range(CONTEXT_LINES))]
    return "\n".join(lines)


@dataclass(frozen=True)
class Signature:
    kind: str
    regexes: tuple


def read_known(path):
    """The signatures of a --known file."""
    sigs, kind, regexes = [], None, []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if not line[0].isspace():
                if kind:
                    sigs.append(Signature(kind, tuple(regexes)))
                kind, regexes = line.strip(), []
            elif kind is None:
                raise ValueError(f"{path}:{number}: a pattern before any kind")
            else:
                regexes.append(re.compile(line.strip()))
    if kind:
        sigs.append(Signature(kind, tuple(regexes)))
    if any(not sig.regexes for sig in sigs):
        raise ValueError(f"{path}: a signature without patterns would forgive every report")
    return sigs


def matches(sig, report, messages):
    """Whether the report fits the signature: same kind, every pattern in order."""
    if sig.kind != report.kind:
        return False
    lines = iter(messages[report.line:report.line + KNOWN_WINDOW])
    return all(any(regex.search(line) for line in lines) for regex in sig.regexes)


def read_messages(path):
    """The messages of a log file, or of standard input for "-"."""
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    # Logs may hold stray bytes (a console cut mid-character); they never are in a header.
    text = data.decode("utf-8", errors="replace").replace("\0", "")
    return [strip_prefix(line) for line in text.splitlines()]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Report KASAN, lockdep, UBSAN, kmemleak, WARN, BUG, Oops, panic and other "
                    "kernel error reports found in kernel logs. Exit status 1 when any is found.")
    parser.add_argument("--known", metavar="SIGS", action="append", default=[],
                        help="file of known report signatures, which do not count "
                             "(may be given more than once)")
    parser.add_argument("files", metavar="FILE", nargs="*", default=["-"],
                        help='kernel log (dmesg output); "-" or none for standard input')
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    found = unreadable = 0
    try:
        known = [sig for path in args.known for sig in read_known(path)]
    except (OSError, ValueError, re.error) as e:
        print(f"splat_check: --known: {e}", file=sys.stderr)
        return 2
    for path in args.files:
        name = "<stdin>" if path == "-" else path
        try:
            messages = read_messages(path)
        except OSError as e:
            # A log that cannot be read cannot vouch for the kernel: a usage error, not a pass.
            print(f"splat_check: {name}: {e.strerror}", file=sys.stderr)
            unreadable += 1
            continue
        reports = []
        for report in find_reports(messages):
            if any(matches(sig, report, messages) for sig in known):
                header = messages[report.line].strip()
                print(f"splat_check: {name}: known: {report.kind}: {header}", file=sys.stderr)
            else:
                reports.append(report)
        for report in reports:
            print(format_report(report, messages))
        if reports:
            print(f"splat_check: {name}: {len(reports)} report(s)", file=sys.stderr)
        found += len(reports)
    if unreadable:
        return 2
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
