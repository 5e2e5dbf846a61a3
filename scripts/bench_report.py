#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The benchmark's report: perftest's numbers from the raw output of scripts/bench-guest.sh,
gathered over several boots, one row per test and metric: each provider's median, minimum and
maximum, the ratio of its median to the reference's (the C rdmavt's unless --reference says
otherwise), and "within noise" where the two ranges
overlap; each bandwidth row also as a fraction of the guest's memcpy bandwidth at that size.

    bench_report.py [--png FILE [--title TEXT]] [--reference PROVIDER] RAW_DIR PROVIDER...

RAW_DIR/PROVIDER/ROUND/ holds one boot's output: status (one "NAME ok|failed(...)|
unsupported(...)" line per point, or "setup failed"), NAME.client and NAME.server (perftest's
output on each side; the client's numbers count), NAME.cmd (its command line) and memcpy.txt (scripts/bench/memcpy-bw's output, whose "memcpy
SIZE MB/s" lines are the limit). RAW_DIR/order lists the boots as they ran. Markdown on stdout; with --png, the ratios to the reference as a plot.
Speed is reported, never judged: a point that left no number is shown as failed and listed,
but whether the run failed is for scripts/bench.sh to say, from the boots' exit statuses.
"""

import argparse
import os
import re
import statistics
import sys

LABELS = {"rs": "rdmavt-rs", "rs-notrace": "rdmavt-rs without trace events", "c": "C rdmavt",
          "rxe": "rxe", "siw": "siw"}
# The provider the ratios are to; --reference changes it.
REFERENCE = "c"
# Its name in the ratio columns and the plot.
SHORT = {"c": "C", "rs-notrace": "no-trace"}


def short(p):
    return SHORT.get(p, LABELS.get(p, p))

BW = "BW average [MB/s]"
MSGRATE = "MsgRate [Mpps]"
FRACTION = "BW / memcpy"
# What perftest prints to stderr when its clock calibration fails (src/get_clock.c).
CALIBRATION = "Correlation coefficient r^2"
# perftest's column headers (some contain spaces) and the metric each one is reported as.
COLUMNS = {
    "BW average[MB/sec]": BW,
    "MsgRate[Mpps]": MSGRATE,
    "t_typical[usec]": "t_typical [usec]",
    "t_avg[usec]": "t_avg [usec]",
    "99% percentile[usec]": "99% [usec]",
    "99.9% percentile[usec]": "99.9% [usec]",
}
HEADER_RE = re.compile(r"BW peak\[[^\]]*\]|BW average\[[^\]]*\]|\d+(?:\.\d+)?% percentile\[[^\]]*\]"
                       r"|\S+")
# Message rate is what a small message measures; for large ones bandwidth says it all.
MSGRATE_MAX_BYTES = 64
LATENCY_METRICS = ("t_typical [usec]", "t_avg [usec]", "99% [usec]", "99.9% [usec]")


def parse(text):
    """(bytes, {metric: value}) from one perftest output; (None, {}) when it has no result
    line. A value that is not above zero is no measurement and is left out: perftest prints
    0.00 MB/sec for some points on rxe and siw, although it counted iterations."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "#bytes" not in line:
            continue
        names = HEADER_RE.findall(line)
        for data in lines[i + 1:]:
            fields = data.split()
            if not fields or not fields[0].isdigit():
                continue
            size = int(fields[0])
            values = {}
            for name, field in zip(names, fields):
                metric = COLUMNS.get(name)
                if metric is None or (metric == MSGRATE and size > MSGRATE_MAX_BYTES):
                    continue
                try:
                    value = float(field)
                except ValueError:
                    continue
                if value > 0:
                    values[metric] = value
            return size, values
        break
    return None, {}


def measured(vals):
    """Whether a point's parsed metrics hold its main number: bandwidth or latency."""
    return BW in vals or any(m in vals for m in LATENCY_METRICS)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


class Boot:
    """One boot's results: status, metrics and message size per point, memcpy bandwidth."""

    def __init__(self, path):
        self.round = os.path.basename(path)
        self.status, self.order, self.values, self.sizes, self.cmds = {}, [], {}, {}, {}
        self.memcpy, self.from_server, self.uncalibrated = {}, [], []
        for line in (read(os.path.join(path, "memcpy.txt")) or "").splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[0] == "memcpy":
                self.memcpy[int(fields[1])] = float(fields[2])
        text = read(os.path.join(path, "status"))
        # A boot without a status file, or whose device set-up failed, ran no point at all.
        self.booted = text is not None and "setup failed" not in text.splitlines()
        for line in (text or "").splitlines():
            name, _, st = line.partition(" ")
            if not st or name == "setup":
                continue
            self.status[name] = st
            self.order.append(name)
            self.cmds[name] = (read(os.path.join(path, name + ".cmd")) or "").strip()
            if st == "ok":
                client = read(os.path.join(path, name + ".client")) or ""
                size, vals = parse(client)
                # Now and then a side prints 0.00 MB/sec: perftest calibrates its clock when it
                # reports, against gettimeofday(), and under TCG the fit can fail ("Correlation
                # coefficient r^2: ... < 0.9"), which with -F gives it a clock of 0 MHz. An
                # ib_send_bw receiver measures the same stream itself and may have the number;
                # for the other programs the server prints the client's numbers.
                if not measured(vals):
                    if CALIBRATION in client:
                        self.uncalibrated.append(name)
                    size, vals = parse(read(os.path.join(path, name + ".server")) or "")
                    if measured(vals):
                        self.from_server.append(name)
                # The bandwidth as a fraction of memcpy at the same size, in the same boot.
                if BW in vals and size in self.memcpy:
                    vals[FRACTION] = vals[BW] / self.memcpy[size]
                self.values[name], self.sizes[name] = vals, size

    def state(self, name):
        """ok, unsupported or failed for point NAME in this boot: a point that ran but left
        no number has failed too."""
        st = self.status.get(name)
        if st is not None and st.startswith("unsupported"):
            return "unsupported"
        if st == "ok" and measured(self.values.get(name, {})):
            return "ok"
        return "failed"


def load(raw, provider):
    """The boots of PROVIDER, in round order."""
    base = os.path.join(raw, provider)
    try:
        rounds = sorted((d for d in os.listdir(base) if d.isdigit()), key=int)
    except OSError:
        rounds = []
    return [Boot(os.path.join(base, r)) for r in rounds]


class Cell:
    """One provider's values of one row's metric over its boots, and how many of those
    boots failed the point or could not run it."""

    def __init__(self, values, runs, failed=0, unsupported=0):
        self.values, self.runs, self.failed, self.unsupported = values, runs, failed, unsupported

    @classmethod
    def of(cls, boots, name, metric, derived):
        cell = cls([], len(boots))
        for b in boots:
            state = b.state(name)
            value = b.values.get(name, {}).get(metric)
            if value is not None:
                cell.values.append(value)
            elif state == "unsupported":
                cell.unsupported += 1
            # A derived number (memcpy fraction) missing is not a run that failed.
            elif not derived or state != "ok":
                cell.failed += 1
        return cell

    @property
    def median(self):
        return statistics.median(self.values) if self.values else None

    @property
    def low(self):
        return min(self.values) if self.values else None

    @property
    def high(self):
        return max(self.values) if self.values else None

    def text(self):
        if not self.values:
            if self.failed:
                return "failed" if self.runs == 1 else f"failed ({self.failed} of {self.runs})"
            return "n/a" if self.unsupported else "-"
        s = fmt(self.median)
        if len(self.values) > 1:
            s += f" ({fmt(self.low)}-{fmt(self.high)})"
        if self.failed:
            s += f", {self.failed} of {self.runs} failed"
        return s


def fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def overlap(a, b):
    """Whether the min-max ranges of two cells overlap: then the difference of their medians
    is within the boot-to-boot noise."""
    return max(a.low, b.low) <= min(a.high, b.high)


def ratio(a, ref):
    """(median ratio, lowest, highest, within noise) of cell A to the reference cell, or None
    when either has no value. The extreme ratios pair A's minimum with the reference's
    maximum and the other way round, so the range contains 1 exactly when the two ranges
    overlap."""
    if not a.values or not ref.values:
        return None
    return (a.median / ref.median, a.low / ref.high, a.high / ref.low, overlap(a, ref))


def rows_of(data, providers):
    """[(name, metric, derived)] in run order: each point's metrics as perftest reported them,
    then its fraction of memcpy."""
    names, metrics = [], {}
    for p in providers:
        for b in data[p]:
            for n in b.order:
                if n not in names:
                    names.append(n)
                for m in b.values.get(n, {}):
                    metrics.setdefault(n, [])
                    if m not in metrics[n]:
                        metrics[n].append(m)
    rows = []
    for n in names:
        ms = metrics.get(n) or [BW if "_bw" in n else "t_typical [usec]"]
        order = [BW, MSGRATE, *LATENCY_METRICS]
        ms = sorted(ms, key=lambda m: order.index(m) if m in order else len(order))
        for m in ms:
            rows.append((n, m, m == FRACTION))
    return rows


def memcpy_rows(data, providers, blanks):
    """The memcpy bandwidth per size and provider: the same guest each time, so its spread
    also shows how steady the host was."""
    sizes = sorted({s for p in providers for b in data[p] for s in b.memcpy})
    out = []
    for s in sizes:
        cells = []
        for p in providers:
            cells.append(Cell([b.memcpy[s] for b in data[p] if s in b.memcpy],
                              len(data[p])).text())
        out.append(f"| memcpy_{size_name(s)} | memcpy [MB/s] | "
                   + " | ".join(cells + [""] * blanks) + " |")
    return out


def size_name(s):
    for unit, shift in (("m", 20), ("k", 10)):
        if s >= 1 << shift and s % (1 << shift) == 0:
            return f"{s >> shift}{unit}"
    return str(s)


def table(data, providers):
    """The markdown table and the ratio data for the plot."""
    others = [p for p in providers if p != REFERENCE]
    ref = REFERENCE in providers
    head = [LABELS.get(p, p) for p in providers]
    if ref:
        head += [f"{LABELS.get(p, p)} / {short(REFERENCE)}" for p in others]
    lines = ["| test | metric | " + " | ".join(head) + " |", "|" + " --- |" * (2 + len(head))]
    lines += memcpy_rows(data, providers, len(others) if ref else 0)
    plot = []
    for name, metric, derived in rows_of(data, providers):
        cells = {p: Cell.of(data[p], name, metric, derived) for p in providers}
        row = [cells[p].text() for p in providers]
        ratios = {}
        if ref:
            for p in others:
                r = None if derived else ratio(cells[p], cells[REFERENCE])
                ratios[p] = r
                row.append("-" if r is None else
                           f"{r[0]:.2f}" + (" (within noise)" if r[3] else ""))
        lines.append(f"| {name} | {metric} | " + " | ".join(row) + " |")
        if ref and not derived and metric != MSGRATE:
            plot.append((name, metric, ratios))
    return lines, plot


def alternating(order, providers):
    """The providers whose every boot ran next to the reference's boot of the same round, by
    the boot order (`raw/order`, a "provider round" line per boot): the rdmavts, which
    alternate round by round; not rxe and siw, which run after them."""
    boots = [tuple(line.split()) for line in (order or "").splitlines() if line.strip()]
    out = []
    for p in providers:
        if p == REFERENCE:
            continue
        mine = [i for i, b in enumerate(boots) if b[0] == p]
        if mine and all(
                (REFERENCE, boots[i][1]) in boots[max(i - 1, 0):i + 2] for i in mine):
            out.append(p)
    return out


def paired(data, providers, order):
    """The ratios boot by boot: each provider that alternates with the reference (3 rounds at
    least) against the reference's boot of the same round, which ran next to it and so shared
    more of the host's state than the medians of all boots do. Per row: the median of the
    rounds' ratios with their minimum and maximum, and in how many rounds the provider was the
    faster (the higher bandwidth or message rate, the lower latency)."""
    ref = data.get(REFERENCE, [])
    others = [p for p in alternating(order, providers) if len(data[p]) >= 3 and len(ref) >= 3]
    if not others:
        return []
    head = [f"{LABELS.get(p, p)} / {short(REFERENCE)}, paired" for p in others]
    head += [f"{LABELS.get(p, p)} the faster" for p in others]
    lines = ["| test | metric | " + " | ".join(head) + " |", "|" + " --- |" * (2 + len(head))]
    by_round = {b.round: b for b in ref}
    for name, metric, derived in rows_of(data, providers):
        if derived:
            continue
        ratios, wins = [], []
        for p in others:
            per_round = []
            for b in data[p]:
                value = b.values.get(name, {}).get(metric)
                ref_boot = by_round.get(b.round)
                ref_value = ref_boot.values.get(name, {}).get(metric) if ref_boot else None
                if value is not None and ref_value:
                    per_round.append(value / ref_value)
            if not per_round:
                ratios.append("-")
                wins.append("-")
                continue
            lower_is_faster = metric in LATENCY_METRICS
            faster = sum(1 for x in per_round if (x < 1 if lower_is_faster else x > 1))
            ratios.append(f"{statistics.median(per_round):.2f} "
                          f"({min(per_round):.2f}-{max(per_round):.2f})")
            wins.append(f"{faster} of {len(per_round)}")
        lines.append(f"| {name} | {metric} | " + " | ".join(ratios + wins) + " |")
    return lines


def closeness(data, providers):
    """How close each provider's 1 MiB bandwidth comes to memcpy at 1 MiB."""
    out = []
    for p in providers:
        parts = []
        for b in data[p]:
            for n in b.order:
                if b.sizes.get(n) == 1 << 20 and n not in [x for x, _ in parts]:
                    cell = Cell.of(data[p], n, FRACTION, True)
                    parts.append((n, cell))
        got = [f"{n} {fmt(c.median)}" for n, c in parts if c.values]
        if got:
            out.append(f"- {LABELS.get(p, p)}: " + ", ".join(got))
    return out


def commands(data, providers):
    cmds = {}
    for p in providers:
        for b in data[p]:
            for n, c in b.cmds.items():
                cmds.setdefault(n, c)
    return [f"- {n}: `{c}`" for n, c in cmds.items()]


def failure(boot, name, status):
    """Why point NAME of BOOT failed, from its STATUS and its output."""
    if status != "ok":
        return status
    if name in boot.uncalibrated:
        return "no number: perftest's clock calibration failed (r^2 < 0.9), a 0 MHz clock"
    return "no number in the output"


def problems(raw, data, providers):
    """Every point that failed or was not supported, and every boot that ran nothing."""
    failed, unsupported = [], []
    for p in providers:
        if not data[p]:
            failed.append(f"{p}: no boot ran")
        for b in data[p]:
            if not b.booted:
                failed.append(f"{p}/{b.round}: the boot ran no point (see "
                              f"{os.path.join(raw, p, b.round, 'vm.log')})")
            for n, st in b.status.items():
                if st.startswith("unsupported"):
                    if f"{p} {n}" not in [u.split(":")[0] for u in unsupported]:
                        unsupported.append(f"{p} {n}: {st}")
                elif b.state(n) == "failed":
                    failed.append(f"{p}/{b.round} {n}: " + failure(b, n, st))
    return failed, unsupported


def plot(path, rows, providers, title):
    """The ratio to the reference (the C rdmavt) per row, rdmavt-rs with its min-max range,
    rxe and siw as points: bandwidth rows (above 1 is faster) and latency rows (above 1 is
    slower) on two panels, both logarithmic, so that rxe's 0.02 and rdmavt-rs's 0.9 both
    read."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    ref = short(REFERENCE)
    panels = [(f"bandwidth / message rate: rdmavt-rs / {ref} (above 1: faster than {ref})",
               [r for r in rows if r[1] not in LATENCY_METRICS]),
              (f"latency: rdmavt-rs / {ref} (above 1: slower than {ref})",
               [r for r in rows if r[1] in LATENCY_METRICS])]
    panels = [(t, r) for t, r in panels if r]
    if not panels:
        return False
    heights = [max(len(r), 1) for _, r in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 1.5 + 0.3 * sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    styles = {"rs": ("o", "tab:blue"), "rxe": ("s", "tab:gray"), "siw": ("^", "tab:olive")}
    for ax, (subtitle, prows) in zip(axes[:, 0], panels):
        ys = list(range(len(prows)))[::-1]
        for p in providers:
            if p == REFERENCE:
                continue
            marker, color = styles.get(p, ("x", "black"))
            pts = [(y, r[2].get(p)) for y, r in zip(ys, prows) if r[2].get(p)]
            if not pts:
                continue
            y = [y for y, _ in pts]
            med = [v[0] for _, v in pts]
            if p == "rs":
                err = [[v[0] - v[1] for _, v in pts], [v[2] - v[0] for _, v in pts]]
                ax.errorbar(med, y, xerr=err, fmt=marker, color=color, capsize=3,
                            label=f"{LABELS[p]} / {ref} (median, min-max)")
            else:
                ax.plot(med, y, marker, color=color, alpha=0.6,
                        label=f"{LABELS.get(p, p)} / {ref}")
        # A row rdmavt-rs has no ratio for says so, rather than staying blank.
        for y, r in zip(ys, prows):
            if not r[2].get("rs"):
                ax.annotate("no ratio (failed)", (1, y), xytext=(4, -3),
                            textcoords="offset points", fontsize=7, color="tab:red")
        ax.axvline(1, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_yticks(ys)
        ax.set_yticklabels([f"{r[0]} {r[1].split(' [')[0]}" for r in prows], fontsize=8)
        ax.set_ylim(-0.7, len(prows) - 0.3)
        ax.set_title(subtitle, fontsize=9)
        ax.grid(axis="x", which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", help="write the plot of the ratios here")
    ap.add_argument("--title", default="QEMU TCG, 2 vCPUs", help="what the plot was measured on")
    ap.add_argument("--reference", default="c", help="the provider the ratios are to (c)")
    ap.add_argument("raw")
    ap.add_argument("providers", nargs="+")
    args = ap.parse_args()
    global REFERENCE
    REFERENCE = args.reference
    providers = args.providers
    data = {p: load(args.raw, p) for p in providers}

    lines, ratio_rows = table(data, providers)
    print("\n".join(lines))
    print()
    print("Each cell: the median over the boots, then (minimum-maximum) when there were "
          "several. Ratios are of medians: above 1 is faster for bandwidth and message rate, "
          "slower for latency. \"within noise\": the two min-max ranges overlap. "
          f"{FRACTION}: the bandwidth as a fraction of the guest's memcpy at the same size, "
          "measured in the same boot; a one-copy loopback approaches 1 at 1 MiB at best.")
    order = read(os.path.join(args.raw, "order"))
    pairs = paired(data, providers, order)
    if pairs:
        print()
        print("Boot by boot: each boot's value over the reference's boot of the same round "
              "(the two ran minutes apart), median (minimum-maximum) over the rounds, and in "
              "how many rounds the provider was the faster. Slow changes of the host's speed "
              "cancel here more than in the ratio of medians.")
        print()
        print("\n".join(pairs))
    close = closeness(data, providers)
    if close:
        print()
        print(f"How close to memcpy at 1 MiB ({FRACTION}, medians):")
        print()
        print("\n".join(close))
    if order:
        print()
        print("Boot order: " + ", ".join(" ".join(l.split()) for l in order.splitlines()) + ".")
    print()
    print("Commands, the same on both sides (DEV: rvt_loop0, rxe0 or siw0; `-p PORT` and, "
          "on the client, the server's address added: 127.0.0.1, for siw its NIC's; siw adds "
          "`-R`, iWARP's connection set-up through the RDMA CM):")
    print()
    print("\n".join(commands(data, providers)))
    from_server = [f"{p}/{b.round} {n}" for p in providers for b in data[p] for n in b.from_server]
    if from_server:
        print()
        print("The sender printed 0.00 MB/sec; the receiver's numbers are used: "
              + "; ".join(from_server))
    failed, unsupported = problems(args.raw, data, providers)
    if unsupported:
        print()
        print("Not supported by the device (n/a): " + "; ".join(unsupported))
    if failed:
        print()
        print("Failed: " + "; ".join(failed))
    if args.png and ratio_rows:
        try:
            title = f"relative to {LABELS.get(REFERENCE, REFERENCE)}: {args.title}"
            plot(args.png, ratio_rows, providers, title)
        except ImportError as e:
            print(f"bench_report: no plot: {e} (scripts/setup.sh installs python3-matplotlib)",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
