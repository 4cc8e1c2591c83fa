"""Two self-contained SVG plots of a run's medians, for docs/performance.md.

throughput.svg: cycles/s per workload, dlock beside the peers.
waiters.svg:    handoffs/s and requests per grant against the number of
                waiting processes.
Hand-written SVG (the standard library only): a browser and GitHub show it
as it is. A workload a run lacks is left out, as is a plot with nothing in it.

usage: plots.py LATEST.json OUTDIR   (redraws the plots of a summarized run)"""
import json
import math
import os
import sys
from xml.sax.saxutils import escape

SERIES = {  # name, colour (distinguishable with the common colour blindnesses)
    "dlock": "#0072b2", "dlock fair": "#0072b2", "dlock default": "#56b4e9",
    "redis-py": "#e69f00", "node-redlock": "#009e73",
}

# (workload, {series: label in the medians}); cycles/s, one lock per cycle.
THROUGHPUT = [
    ("1 node", {"dlock": "uncontended", "redis-py": "redis-py-uncontended",
                "node-redlock": "node-redlock-uncontended"}),
    ("1 node + replica, WAIT 1", {"dlock": "replicas-1"}),
    ("Redlock, 5 nodes", {"dlock": "redlock", "node-redlock": "node-redlock-redlock"}),
    ("Redlock, 2 of 5 paused", {"dlock": "redlock-minority",
                                "node-redlock": "node-redlock-minority"}),
]

# Contended labels: the series and its label without the "-N" process count
# (8 when absent). The peers poll; their fastest retry setting is shown.
WAITERS = [
    ("dlock fair", "contended-fair"),
    ("dlock default", "contended"),
    ("redis-py", "redis-py-contended-sleep-0.001"),
    ("node-redlock", "node-redlock-contended-retry-1"),
]
DEFAULT_PROCS = 8

FONT = 'font-family="Helvetica,Arial,sans-serif"'


def text(x, y, s, size=12, anchor="start", weight="normal", extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" {extra}>{escape(s)}</text>')


def nice_ticks(top):
    """0 and round steps up to at least top (1, 2 or 5 times a power of ten)."""
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def short(v):
    """A value label: 3 significant digits, thousands as k."""
    if v >= 1000:
        return f"{v / 1000:.3g}k"
    return f"{v:.3g}"


def panel(x, y, w, h, title, unit, groups, group_caption):
    """Vertical grouped bars: groups is [(group label, [(series, value)])]."""
    out = [text(x + w / 2, y - 24, title, 14, "middle", "bold")]
    top = max(v for _, bars in groups for _, v in bars)
    ticks = nice_ticks(top)
    scale = h / ticks[-1]
    for t in ticks:  # grid lines with the axis' values
        ty = y + h - t * scale
        out.append(f'<line x1="{x}" y1="{ty:.1f}" x2="{x + w}" y2="{ty:.1f}" stroke="#ddd"/>')
        out.append(text(x - 6, ty + 4, f"{t:,.6g}", 11, "end"))
    out.append(text(x - 52, y + h / 2, unit, 12, "middle",
                    extra=f'transform="rotate(-90 {x - 52} {y + h / 2:.1f})"'))
    out.append(f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + h}" stroke="#333"/>')
    out.append(f'<line x1="{x}" y1="{y + h}" x2="{x + w}" y2="{y + h}" stroke="#333"/>')
    slot = w / len(groups)
    for i, (label, bars) in enumerate(groups):
        bar_w = min(36, slot * 0.8 / len(bars))
        left = x + i * slot + (slot - bar_w * len(bars)) / 2
        for j, (series, v) in enumerate(bars):
            bx, bh = left + j * bar_w, v * scale
            out.append(f'<rect x="{bx:.1f}" y="{y + h - bh:.1f}" width="{bar_w - 2:.1f}" '
                       f'height="{bh:.1f}" fill="{SERIES[series]}"><title>{escape(series)}: '
                       f'{v:,.6g} {escape(unit)}</title></rect>')
            out.append(text(bx + bar_w / 2 - 1, y + h - bh - 4, short(v), 10, "middle"))
        out.append(text(x + (i + 0.5) * slot, y + h + 16, label, 12, "middle"))
    out.append(text(x + w / 2, y + h + 36, group_caption, 12, "middle"))
    return out


def legend(x, y, names):
    out = []
    for name in names:
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{SERIES[name]}"/>')
        out.append(text(x + 17, y, name, 12))
        x += 30 + 7 * len(name)
    return out


def document(width, height, parts):
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT}>',
        # An opaque background: readable on a dark page too.
        f'<rect width="{width}" height="{height}" fill="#fff"/>', *parts, "</svg>", ""])


def used(groups):
    names = {s for _, bars in groups for s, _ in bars}
    return [s for s in SERIES if s in names]


def throughput(by):
    groups = []
    for workload, labels in THROUGHPUT:
        bars = [(s, by[l]["cycles_per_s"]) for s, l in labels.items()
                if by.get(l, {}).get("cycles_per_s")]
        if bars:
            groups.append((workload, bars))
    if not groups:
        return None
    width = max(560, 150 * len(groups) + 120)
    parts = panel(90, 70, width - 120, 300, "Lock + unlock cycles per second (higher is better)",
                  "cycles/s", groups, "workload (one client; medians of the run)")
    return document(width, 450, parts + legend(90, 435, used(groups)))


def contended(by, figure):
    """[(processes, [(series, figure(medians))])], by process count."""
    points = {}
    for label, r in by.items():
        for series, base in WAITERS:
            procs = label[len(base) + 1:] if label.startswith(base + "-") else ""
            if (label == base or procs.isdigit()) and figure(r):
                points.setdefault(int(procs or DEFAULT_PROCS), {})[series] = figure(r)
    order = [s for s, _ in WAITERS]
    return [(str(p), sorted(points[p].items(), key=lambda b: order.index(b[0])))
            for p in sorted(points)]


def waiters(by):
    handoffs = contended(by, lambda r: r.get("handoffs_per_s"))
    requests = contended(by, lambda r: r.get("requests_per_grant", r.get("client_commands_per_grant")))
    panels = [(handoffs, "Handoffs per second (higher is better)", "handoffs/s"),
              (requests, "Requests per grant (lower is better)", "requests/grant")]
    panels = [p for p in panels if p[0]]
    if not panels:
        return None
    parts, x = [], 90
    for groups, title, unit in panels:
        parts += panel(x, 70, 360, 300, title, unit, groups,
                       "processes waiting for one lock")
        x += 460
    names = used([g for groups, _, _ in panels for g in groups])
    notes = ["The peers poll: redis-py sleeps 1 ms, node-redlock retries every 1 ms.",
             "dlock's requests are its round trips to Redis; the peers' are the commands they send."]
    notes = notes if set(names) - {"dlock fair", "dlock default"} else []
    parts += [text(90, 462 + 15 * i, n, 11, extra='fill="#555"') for i, n in enumerate(notes)]
    return document(max(x - 10, 640), 490, parts + legend(90, 435, names))


def write(by, outdir):
    """Writes the plots the medians allow, removing an earlier run's plot
    this run has nothing for; returns the paths written."""
    written = []
    for name, svg in [("throughput.svg", throughput(by)), ("waiters.svg", waiters(by))]:
        path = os.path.join(outdir, name)
        if svg:
            with open(path, "w") as f:
                f.write(svg)
            written.append(path)
        elif os.path.exists(path):
            os.remove(path)
    return written


if __name__ == "__main__":
    latest, outdir = sys.argv[1:3]
    for path in write(json.load(open(latest))["medians"], outdir):
        print(path)
