#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""TAP plumbing for `make check`: turns what the guest recorded into test points, and counts.

  tap.py kunit LOG SUITE...        every case of each KUnit SUITE found in the kernel LOG, as
                                   TAP points; a suite that did not run is a failure
  tap.py prefix NAME RC FILE       the top-level points of a TAP FILE renamed "NAME: ...", plus
                                   a failure when the program exited RC != 0 without saying why,
                                   printed no point, or printed no plan "1..N" or one that
                                   disagrees with the points it printed
  tap.py unittest NAME LOG [GAPS VARIANT]
                                   the results of a verbose Python unittest run as TAP points,
                                   and their plan; a test the GAPS file lists for VARIANT (rs or
                                   c) that does not pass is a TODO, not a failure
  tap.py diff NAME LOG_A LOG_B [GAPS]
                                   one point per test: the same outcome in both unittest runs
                                   (a difference in a GAPS test is a TODO); a test skipped in
                                   both is a skip, with its reason
  tap.py fuzzdiff NAME LOG_A LOG_B
                                   one point per seed of the differential fuzzer: its step log
                                   (tests/kselftest/fuzz.py) the same in both runs; the first
                                   differing steps are shown
  tap.py count FILE...             prints the skipped points by category (SKIP_CATEGORIES),
                                   then, as the last line, "N passed, N failed, N skipped" over
                                   all top-level points; exits 1 on any failure or when nothing
                                   ran

Only top-level points count: a line "ok N desc" or "not ok N desc" with no indentation.
"# SKIP" and "# TODO" directives count as skipped.
"""

import ast
import re
import sys

POINT = re.compile(r"^(not ok|ok)\b\s*(\d+)?\s*-?\s*(.*)$")
# dmesg prefixes: "[   12.345678] " timestamps and "<6>" levels.
DMESG_PREFIX = re.compile(r"^(<\d+>)?(\[\s*\d+\.\d+\]\s?)?")
SUBTEST = re.compile(r"^\s*# Subtest: (\S+)$")
KUNIT_CASE = re.compile(r"^ {4}(not ok|ok) \d+ (.*)$")
KUNIT_SUITE_END = re.compile(r"^(not ok|ok) \d+ (\S+)")
PLAN = re.compile(r"^1\.\.(\d+)\b")
DIRECTIVE = re.compile(r"#\s*(SKIP|TODO)\b\s*(.*)$", re.I)

# Why a point was skipped, from the text after its "# SKIP": the first row whose pattern
# matches (case-insensitively) names the category, "for other reasons" when none does; a
# "# TODO" point is a known gap, whatever its text. The patterns are the skip messages of
# pyverbs (rdma-core's tests/*.py) and of our own kselftests; add a row when a new kind of
# skip shows up under "other reasons".
FEATURES, C_BUGS, RANDOM, TODO, OTHER = (
    "for features neither rdmavt has", "for C rdmavt bugs", "for random pyverbs caps",
    "TODO (known gaps)", "for other reasons")
RANDOM_CAPS = "random caps (tests/pyverbs-known-gaps)"
SKIP_CATEGORIES = (
    # pyverbs tests whose QP caps are drawn at random (the "random" lines of the gaps file):
    # unittest and diff below put RANDOM_CAPS in front of their skip reason.
    (RANDOM, re.escape(RANDOM_CAPS)),
    # Our kselftests skip a case on the C rdmavt where running it would trip a C bug, and say so.
    (C_BUGS, r"\bC rdmavt\b|\bC bug\b"),
    # What neither rdmavt implements (ib_device_ops both leave NULL), in pyverbs' words.
    (FEATURES, r"device memory|\bDM(MR)?\b"),  # alloc_dm, reg_dm_mr
    (FEATURES, r"\bMW\b|memory window"),  # alloc_mw
    (FEATURES, r"dma-?buf|/dev/dri/"),  # reg_user_mr_dmabuf (and no GPU to export one)
    (FEATURES, r"\bRAW\b.*\bQP\b|raw packet"),  # IBV_QPT_RAW_PACKET
    (FEATURES, r"\bXRC"),  # alloc_xrcd, XRC QPs and SRQs
    (FEATURES, r"\bRoCE|Ethernet link layer"),  # rdmavt's ports are InfiniBand
    (FEATURES, r"\brereg\b"),  # rereg_user_mr
    (FEATURES, r"\bODP\b|on.demand paging|advise MR"),  # ODP caps, advise_mr
)


def points(lines):
    """(passed?, description) for every top-level TAP point."""
    for line in lines:
        m = POINT.match(line.rstrip("\n"))
        if m:
            yield m.group(1) == "ok", m.group(3)


def kind(ok, desc):
    if DIRECTIVE.search(desc):
        return "skipped"
    return "passed" if ok else "failed"


def skip_category(desc):
    """The category of a skipped point (SKIP_CATEGORIES)."""
    m = DIRECTIVE.search(desc)
    if m.group(1).upper() == "TODO":
        return TODO
    for category, pattern in SKIP_CATEGORIES:
        if re.search(pattern, m.group(2), re.I):
            return category
    return OTHER


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
    # A guest that died before it wrote the log ran no suite: each one fails below.
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            runs = kunit_runs(f)
    except FileNotFoundError:
        runs = {}
    n = 0
    for suite in suites:
        if not runs.get(suite):
            n += 1
            emit(n, False, f"kunit {suite}: the suite did not run")
            continue
        for ok, case in runs[suite]:
            n += 1
            emit(n, ok, f"kunit {suite}.{case}")


def plan_problem(lines, n):
    """What is wrong with the top-level plan "1..N" of a TAP file with n points, or None."""
    plans = [int(m.group(1)) for m in (PLAN.match(line) for line in lines) if m]
    if n == 0:
        return "printed no test points"
    if not plans:
        return f"printed no plan (1..N) for its {n} test points"
    if len(plans) > 1:
        return f"printed {len(plans)} plans"
    if plans[0] != n:
        return f"planned {plans[0]} test points, printed {n}"
    return None


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
    problems = [plan_problem(lines, n)]
    if rc != "0" and not failed:
        problems.append(f"exited with status {rc}")
    problems = [p for p in problems if p]
    for problem in problems:
        n += 1
        emit(n, False, f"{name}: {problem}")
    if problems:
        for line in lines[-20:]:
            print(f"# {line.rstrip()}")


UNITTEST = re.compile(
    r"^(test\w*) \(([\w.]+)\)(?:\n(?!test\w* \().*?)?\s?\.\.\. "
    r"(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
    re.M,
)


def unittest_results(path):
    """{"module.Class.test": (outcome, skip reason or "")} from a `python -m unittest -v`
    style log, where a skip reads "skipped 'reason'"."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    results = {}
    for _name, full, outcome in UNITTEST.findall(text):
        if not outcome.startswith("skipped"):
            results[full] = (outcome, "")
            continue
        reason = outcome[len("skipped"):].strip()
        try:
            reason = str(ast.literal_eval(reason))
        except (ValueError, SyntaxError):
            pass
        # On one line: it ends up in a TAP point.
        results[full] = ("skipped", " ".join(reason.split()))
    return results


def skip_reason(test, reason, random):
    """The text after "# SKIP" for a skipped unittest test."""
    reason = reason or "no reason given"
    return f"{RANDOM_CAPS}: {reason}" if test in random else reason


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
    random = read_gaps(gaps_path, "random")
    if not results:
        emit(1, False, f"{name}: no test ran")
        print("1..1")
        return
    for n, (test, (outcome, reason)) in enumerate(sorted(results.items()), 1):
        ok = outcome in ("ok", "skipped", "expected failure")
        suffix = f" # SKIP {skip_reason(test, reason, random)}" if outcome == "skipped" else ""
        if not ok and test in gaps:
            suffix = " # TODO known gap (tests/pyverbs-known-gaps)"
        emit(n, ok, f"{name + ': ' if name else ''}{test}: {outcome}{suffix}")
    print(f"1..{len(results)}")


def cmd_diff(name, log_a, log_b, gaps_path=None):
    a, b, gaps = unittest_results(log_a), unittest_results(log_b), read_gaps(gaps_path, "rs")
    random = read_gaps(gaps_path, "random")
    tests = sorted(set(a) | set(b))
    if not tests:
        emit(1, False, f"{name}: no test ran")
        print("1..1")
        return
    for n, test in enumerate(tests, 1):
        (ra, why_a), (rb, why_b) = a.get(test, ("missing", "")), b.get(test, ("missing", ""))
        same = ra == rb or (test in random and {ra, rb} <= {"ok", "skipped"})
        suffix = ""
        if not same and test in gaps:
            suffix = " # TODO known gap (tests/pyverbs-known-gaps)"
        elif ra == rb == "skipped":
            # Nothing was compared: a skip, not a pass.
            why = why_a if why_a == why_b else f"{why_a} / {why_b}"
            suffix = f" # SKIP {skip_reason(test, why, random)}"
        emit(n, same, f"{name}: {test}: {ra} / {rb}{suffix}")
    print(f"1..{len(tests)}")


def fuzz_seeds(path):
    """The fuzzer's log as {seed: [line, ...]}; none when the log is missing."""
    seeds = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"seed (\d+) ", line)
                if m:
                    seeds.setdefault(int(m.group(1)), []).append(line.rstrip("\n"))
    except FileNotFoundError:
        pass
    return seeds


def cmd_fuzzdiff(name, log_a, log_b):
    a, b = fuzz_seeds(log_a), fuzz_seeds(log_b)
    seeds = sorted(set(a) | set(b))
    if not seeds:
        emit(1, False, f"{name}: no seed ran")
        print("1..1")
        return
    for n, seed in enumerate(seeds, 1):
        la, lb = a.get(seed, []), b.get(seed, [])
        same = la == lb and bool(la)
        emit(n, same, f"{name}: seed {seed}: {len(la)} / {len(lb)} steps logged, "
             f"{'the same' if same else 'different'}")
        if not same:
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y),
                         min(len(la), len(lb)))
            for x in la[first:first + 3]:
                print(f"# a: {x}")
            for y in lb[first:first + 3]:
                print(f"# b: {y}")
    print(f"1..{len(seeds)}")


def cmd_count(paths):
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    categories = dict.fromkeys((FEATURES, C_BUGS, RANDOM, TODO, OTHER), 0)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for ok, desc in points(f):
                totals[kind(ok, desc)] += 1
                if kind(ok, desc) == "skipped":
                    categories[skip_category(desc)] += 1
    print("# skipped: " + ", ".join(f"{n} {c}" for c, n in categories.items()))
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
    if len(argv) == 5 and argv[1] == "fuzzdiff":
        return cmd_fuzzdiff(*argv[2:])
    if len(argv) >= 3 and argv[1] == "count":
        return cmd_count(argv[2:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
