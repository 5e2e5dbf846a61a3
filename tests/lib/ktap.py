# SPDX-License-Identifier: GPL-2.0-only
#
# KTAP for the Python kselftests that drive rvt_loop0 through pyverbs, the counterpart of
# ktap.sh: numbered test points on stdout, the errno checks they share, and main(), which
# loads rvt_loop around a test's body. Imported, never run. The tests run under Debian's
# /usr/bin/python3, for which python3-pyverbs is installed.

import os
import subprocess

REPO = os.environ["RDMAVT_RS_REPO"]
DEV = "rvt_loop0"
_points = []


def point(ok, desc):
    """One test point."""
    _points.append(ok)
    print(f"{'ok' if ok else 'not ok'} {len(_points)} {desc}", flush=True)


def skip(desc, reason):
    """A point that does not apply to this run: it does not fail the exit status, and its
    "# SKIP" makes `tap.py count` count it as skipped, not passed. The reason says why, in
    words tests/tap.py's SKIP_CATEGORIES sort by: "C rdmavt ..." for a case a C bug forbids."""
    _points.append(True)
    print(f"ok {len(_points)} {desc} # SKIP {reason or 'no reason given'}", flush=True)


def error_code(err):
    """The errno of a pyverbs error (PyverbsRDMAError) or an OSError, else None."""
    return getattr(err, "error_code", None) or getattr(err, "errno", None)


def fails_with(desc, expected, fn):
    """One point: fn() raises an error whose errno is `expected`. Whatever fn() created
    anyway is closed."""
    try:
        obj = fn()
    except Exception as err:  # noqa: BLE001 - any failure is the answer under test
        code = error_code(err)
        point(code == expected, f"{desc}: errno {code} (expected {expected})")
        if code != expected:
            print(f"# {type(err).__name__}: {err}")
        return
    close = getattr(obj, "close", None)
    if close:
        close()
    point(False, f"{desc}: succeeded (expected errno {expected})")


def succeeds(desc, fn):
    """One point: fn() does not raise; its result, or None."""
    try:
        res = fn()
    except Exception as err:  # noqa: BLE001
        point(False, f"{desc}: {type(err).__name__}: {err}")
        return None
    point(True, desc)
    return res


def main(name, body):
    """Runs a test: the TAP header, rvt_loop loaded, body(), rvt_loop unloaded. An exception
    out of body() fails the test with a point that says so. Returns the exit status: 0 when
    every point passed."""
    print("TAP version 13")
    load = subprocess.run(["insmod", f"{REPO}/rvt_loop.ko"], capture_output=True, text=True)
    if load.returncode != 0:
        point(False, f"{name}: rvt_loop loads: {load.stderr.strip()}")
        print("1..1")
        return 1
    try:
        body()
    except Exception as err:  # noqa: BLE001
        point(False, f"{name}: {type(err).__name__}: {err}")
    finally:
        subprocess.run(["rmmod", "rvt_loop"], check=False)
    print(f"1..{len(_points)}")
    return 0 if _points and all(_points) else 1
