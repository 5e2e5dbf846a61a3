#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The benchmark's report: perftest's numbers from the raw output of scripts/bench-guest.sh,
one row per test and metric, each provider's absolute value and its ratio to the C rdmavt.

    bench_report.py RAW_DIR PROVIDER...

RAW_DIR/PROVIDER/NAME.client is perftest's client output for point NAME, RAW_DIR/PROVIDER/
NAME.cmd its command line, RAW_DIR/PROVIDER/status one "NAME ok|failed(...)" line per point.
Markdown on stdout. Speed is reported, never judged.
"""

import os
import sys

LABELS = {"rs": "rdmavt-rs", "c": "C rdmavt", "rxe": "rxe", "siw": "siw"}
REFERENCE = "c"


def parse(text):
    """{metric: value} from one perftest output: bandwidth average (MB/s) for the *_bw
    programs, typical and average latency (usec) for the *_lat programs."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "#bytes" not in line:
            continue
        for data in lines[i + 1:]:
            fields = data.split()
            if not fields or not fields[0].isdigit():
                continue
            if "BW average" in line and len(fields) >= 4:
                return {"BW average [MB/s]": float(fields[3])}
            if "t_typical" in line and len(fields) >= 6:
                return {"t_typical [usec]": float(fields[4]), "t_avg [usec]": float(fields[5])}
            break
    return {}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def load(raw, provider):
    """({name: {metric: value}}, {name: status}, [names in run order], {name: command})."""
    values, status, order, cmds = {}, {}, [], {}
    text = read(os.path.join(raw, provider, "status")) or ""
    for line in text.splitlines():
        name, _, st = line.partition(" ")
        status[name] = st
        order.append(name)
        client = read(os.path.join(raw, provider, name + ".client")) or ""
        values[name] = parse(client) if st == "ok" else {}
        cmds[name] = (read(os.path.join(raw, provider, name + ".cmd")) or "").strip()
    return values, status, order, cmds


def fmt(v):
    return "-" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")


def main():
    raw, providers = sys.argv[1], sys.argv[2:]
    data = {p: load(raw, p) for p in providers}
    names, cmds = [], {}
    for p in providers:
        for n in data[p][2]:
            if n not in names:
                names.append(n)
            cmds.setdefault(n, data[p][3].get(n, ""))
    others = [p for p in providers if p != REFERENCE]
    print("| test | metric | " + " | ".join(LABELS.get(p, p) for p in providers) + " | "
          + " | ".join(f"{LABELS.get(p, p)} / C" for p in others if REFERENCE in providers)
          + " |")
    ncols = 2 + len(providers) + (len(others) if REFERENCE in providers else 0)
    print("|" + " --- |" * ncols)
    for n in names:
        metrics = []
        for p in providers:
            for m in data[p][0].get(n, {}):
                if m not in metrics:
                    metrics.append(m)
        for m in metrics or ["-"]:
            vals = {p: data[p][0].get(n, {}).get(m) for p in providers}
            cells = []
            for p in providers:
                st = data[p][1].get(n)
                cells.append(fmt(vals[p]) if st == "ok" else (st or "not run"))
            row = f"| {n} | {m} | " + " | ".join(cells) + " |"
            if REFERENCE in providers:
                ref = vals[REFERENCE]
                ratios = [f"{vals[p] / ref:.2f}" if vals[p] is not None and ref else "-"
                          for p in others]
                row += " " + " | ".join(ratios) + " |"
            print(row)
    print()
    print("Commands, the same on both sides (DEV: rvt_loop0, rxe0 or siw0; `-p PORT` and, "
          "on the client, the server's address added: 127.0.0.1, for siw its NIC's; siw adds "
          "`-R`, iWARP's connection set-up through the RDMA CM):")
    print()
    for n in names:
        print(f"- {n}: `{cmds[n]}`")
    failed = [f"{p}/{n}: {st}" for p in providers for n, st in data[p][1].items() if st != "ok"]
    for p in providers:
        if not data[p][1]:
            failed.append(f"{p}: no results (see {p}/vm.log)")
    if failed:
        print()
        print("Failed: " + "; ".join(failed))


if __name__ == "__main__":
    main()
