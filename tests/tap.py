#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""TAP plumbing for `make check`: turns what the guest recorded into test points, and counts.

  tap.py kunit LOG SUITE...        every case of each KUnit SUITE found in the kernel LOG, as
                                   TAP points; a suite that did not run is a failure
  tap.py prefix NAME RC FILE       the top-level points of a TAP FILE renamed "NAME: ...", plus
                                   a failure when the program exited RC != 0 without saying why
  tap.py unittest NAME LOG [GAPS VARIANT]
                                   the results of a verbose Python unittest run as TAP points;
                                   a test the GAPS file lists for VARIANT (rs or c) that does
                                   not pass is a TODO, not a failure
  tap.py diff NAME LOG_A LOG_B [GAPS]
                                   one point per test: the same outcome in both unittest runs
                                   (a difference in a GAPS test is a TODO)
  tap.py count FILE...             prints "N passed, N failed, N skipped" over all top-level
                                   points; exits 1 on any failure or when nothing ran

Only top-level points count: a line "ok N desc" or "not ok N desc" with no indentation.
"# SKIP" and "# TODO" directives count as skipped.
"""

import re
import sys

POINT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*-?\s*(.*)$")
# dmesg prefixes: "[   12.345678] " timestamps and "<6>" levels.
DMESG_PREFIX = re.compile(r"^(<\d+>)?(\[\s*\d+\.\d+\]\s?)?")
SUBTEST = re.compile(r"^\s*# Subtest: (\S+)$")
KUNIT_CASE = re.compile(r"^ {4}(not ok|ok) \d+ (.*)$")
KUNIT_SUITE_END = re.compile(r"^(not ok|ok) \d+ (\S+)")


def points(lines):
    """(passed?, description) for every top-level TAP point."""
    for line in lines:
        m = POINT.match(line.rstrip("\n"))
        if m:
            yield m.group(1) == "ok", m.group(3)


def kind(ok, desc):
    if re.search(r"#\s*(SKIP|TODO)\b", desc, re.I):
        return "skipped"
    return "passed" if ok else "failed"


def emit(n, ok, desc):
    print(f"{'ok' if ok else 'not ok'} {n} {desc}")


def kunit_runs(log_lines):
    """{suite: [(ok, case), ...]} from the first run of each suite in the log."""
    runs, suite, cases = {}, None, []
    for raw in log_lines:
        line = DMESG_PREFIX.sub("", raw.rstrip("\n"))
        m = SUBTEST.match(line)
        if m:
            suite, cases = m.group(1), []
            continue
        if suite is None:
            continue
        m = KUNIT_CASE.match(line)
        if m:
            cases.append((m.group(1) == "ok", m.group(2)))
            continue
        m = KUNIT_SUITE_END.match(line)
        if m and m.group(2) == suite:
            runs.setdefault(suite, cases)
            suite = None
    return runs


def cmd_kunit(log, suites):
    with open(log, encoding="utf-8", errors="replace") as f:
        runs = kunit_runs(f)
    n = 0
    for suite in suites:
        if not runs.get(suite):
            n += 1
            emit(n, False, f"kunit {suite}: the suite did not run")
            continue
        for ok, case in runs[suite]:
            n += 1
            emit(n, ok, f"kunit {suite}.{case}")


def cmd_prefix(name, rc, path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        lines = []
    n, failed = 0, False
    for ok, desc in points(lines):
        n += 1
        failed |= kind(ok, desc) == "failed"
        emit(n, ok, f"{name}: {desc}")
    if rc != "0" and not failed:
        n += 1
        emit(n, False, f"{name}: exited with status {rc}")
        for line in lines[-20:]:
            print(f"# {line.rstrip()}")


UNITTEST = re.compile(
    r"^(test\w*) \(([\w.]+)\)(?:\n(?!test\w* \().*?)?\s?\.\.\. "
    r"(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
    re.M,
)


def unittest_results(path):
    """{"module.Class.test": outcome} from a `python -m unittest -v` style log."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    results = {}
    for _name, full, outcome in UNITTEST.findall(text):
        results[full] = "skipped" if outcome.startswith("skipped") else outcome
    return results


def read_gaps(path, variant):
    """The tests a gaps file lists for this variant: lines "rs TEST" (rdmavt-rs only) or
    "both TEST" (both modules, for what rvt_loop itself cannot do yet); with the variant
    "random", the tests whose outcome depends on pyverbs' random choices."""
    if not path:
        return set()
    gaps = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if len(words) == 2 and not line.startswith("#") and words[0] in ("both", variant):
                gaps.add(words[1])
    return gaps


def cmd_unittest(name, log, gaps_path=None, variant="rs"):
    results, gaps = unittest_results(log), read_gaps(gaps_path, variant)
    if not results:
        emit(1, False, f"{name}: no test ran")
        return
    for n, (test, outcome) in enumerate(sorted(results.items()), 1):
        ok = outcome in ("ok", "skipped", "expected failure")
        suffix = " # SKIP" if outcome == "skipped" else ""
        if not ok and test in gaps:
            suffix = " # TODO known gap (tests/pyverbs-known-gaps)"
        emit(n, ok, f"{name + ': ' if name else ''}{test}: {outcome}{suffix}")


def cmd_diff(name, log_a, log_b, gaps_path=None):
    a, b, gaps = unittest_results(log_a), unittest_results(log_b), read_gaps(gaps_path, "rs")
    random = read_gaps(gaps_path, "random")
    tests = sorted(set(a) | set(b))
    if not tests:
        emit(1, False, f"{name}: no test ran")
        return
    for n, test in enumerate(tests, 1):
        ra, rb = a.get(test, "missing"), b.get(test, "missing")
        same = ra == rb or (test in random and {ra, rb} <= {"ok", "skipped"})
        todo = " # TODO known gap (tests/pyverbs-known-gaps)" if not same and test in gaps else ""
        emit(n, same, f"{name}: {test}: {ra} / {rb}{todo}")


def cmd_count(paths):
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for ok, desc in points(f):
                totals[kind(ok, desc)] += 1
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
    return 1 if totals["failed"] or not totals["passed"] else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "kunit":
        return cmd_kunit(argv[2], argv[3:])
    if len(argv) == 5 and argv[1] == "prefix":
        return cmd_prefix(argv[2], argv[3], argv[4])
    if len(argv) in (4, 5, 6) and argv[1] == "unittest":
        return cmd_unittest(*argv[2:])
    if len(argv) in (5, 6) and argv[1] == "diff":
        return cmd_diff(*argv[2:])
    if len(argv) >= 3 and argv[1] == "count":
        return cmd_count(argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
