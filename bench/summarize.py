#!/usr/bin/env python3
"""Medians of repeated measurements and ratios within one run.

usage: summarize.py RESULTS.jsonl OUT.json OUT.md
Every input line is one measurement tagged with a "label"; the output keeps
the median of each figure per label, and the ratios the project's targets
are stated in (always between figures of the same run). The plots of
bench/plots.py (throughput.svg, waiters.svg) go next to OUT.md."""
import json
import os
import platform
import statistics
import subprocess
import sys

import plots

FIGURES = [
    "cycles_per_s", "us_per_cycle_p50", "us_per_cycle_p99", "requests_per_cycle",
    "commands_per_cycle", "grants_per_s", "handoffs_per_s", "wait_ms_p50", "wait_ms_p99",
    "handoff_ms_p50", "handoff_ms_p99", "handoff_wait_ms_p50", "handoff_wait_ms_p99",
    "requests_per_grant", "commands_per_grant", "client_commands_per_grant",
    "min_grants_per_proc", "max_grants_per_proc", "renewals_per_s", "cpu_s",
    "rss_bytes_per_lock", "lost", "client_commands_per_cycle", "server_us_per_cycle", "failures",
    "redirects",
]
# The semaphore workload also reports its configuration and figures only it
# has; other workloads' procs or wait_ms_mean stay out of their medians.
SEMAPHORE_FIGURES = ["procs", "permits", "cs_us", "renew", "wait_ms_mean", "max_concurrency",
                     "jain_fairness"]
# So does the shared workload (readers and writers on one name).
SHARED_FIGURES = ["readers", "writers", "cs_us", "reader_grants_per_s", "writer_grants_per_s",
                  "reader_wait_ms_mean", "writer_wait_ms_mean", "writer_wait_ms_max",
                  "max_readers_inside"]

# Targets the project states for some figures of a run: a ratio must reach
# its value, a figure of AT_MOST must not pass it.
TARGETS = {
    "uncontended_vs_floor_minimal": 0.90,
    "uncontended_audit_vs_uncontended": 0.75,
    "redlock_5_nodes_vs_1_node": 0.5,
    "redlock_vs_node_redlock_5_nodes": 1.2,
    "redlock_minority_vs_redlock": 0.8,
    "redlock_minority_100ms_vs_redlock": 0.8,
    "mutex_8_vs_fair_8": 1,
    "mutex_64_vs_floor_handoff_64": 0.8,
    "mutex_64_requests_per_grant": 3,
    "mutex_64_min_vs_max_grants": 0.5,
    "fair_64_vs_floor_handoff_64": 0.8,
    "semaphore_requests_per_grant": 3,
    "semaphore_max_concurrency": 4,
}
AT_MOST = {"mutex_64_requests_per_grant", "semaphore_requests_per_grant",
           "semaphore_max_concurrency"}


def medians(rows):
    out = {"runs": len(rows)}
    semaphore = any(r.get("workload") == "semaphore" for r in rows)
    shared = any(r.get("workload") == "shared" for r in rows)
    for key in (FIGURES + (SEMAPHORE_FIGURES if semaphore else [])
                + (SHARED_FIGURES if shared else [])):
        values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = statistics.median(values)
    if any("stalled" in r for r in rows):  # a runner that can hang says so
        out["stalled_runs"] = sum(1 for r in rows if r.get("stalled"))
    fair = [r["per_worker_grants"] for r in rows if r.get("per_worker_grants")]
    if fair:  # the peers report per-process grants as a list
        out["min_grants_per_proc"] = statistics.median(min(f) for f in fair)
        out["max_grants_per_proc"] = statistics.median(max(f) for f in fair)
    return out


def one_row_table(header, cells):
    """A Markdown table of one row, after a blank line."""
    return ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            "| " + " | ".join(cells) + " |"]


def ratio(a, b):
    """a / b to three significant digits: a stalled workload's 0.0003 is not 0."""
    return float(f"{a / b:.3g}") if a and b else None


def machine():
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    redis = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    return {"cpus": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "redis": redis.strip()}


def main():
    src, out_json, out_md = sys.argv[1:4]
    rows = [json.loads(l) for l in open(src) if l.strip()]
    labels = sorted({r["label"] for r in rows})
    by = {label: medians([r for r in rows if r["label"] == label]) for label in labels}
    get = lambda label, key: by.get(label, {}).get(key)
    ratios = {
        "uncontended_vs_floor_minimal": ratio(get("uncontended", "cycles_per_s"),
                                              get("floor-minimal", "cycles_per_s")),
        "uncontended_vs_floor": ratio(get("uncontended", "cycles_per_s"), get("floor", "cycles_per_s")),
        # The ceiling of any lock whose acquire is a script (bench/floor.c).
        "floor_null_vs_floor_minimal": ratio(get("floor-null", "cycles_per_s"),
                                             get("floor-minimal", "cycles_per_s")),
        "uncontended_audit_vs_uncontended": ratio(get("uncontended-audit", "cycles_per_s"),
                                                  get("uncontended", "cycles_per_s")),
        "redlock_5_nodes_vs_1_node": ratio(get("redlock", "cycles_per_s"), get("uncontended", "cycles_per_s")),
        "redlock_vs_node_redlock_5_nodes": ratio(get("redlock", "cycles_per_s"),
                                                 get("node-redlock-redlock", "cycles_per_s")),
        "redlock_minority_vs_redlock": ratio(get("redlock-minority", "cycles_per_s"),
                                             get("redlock", "cycles_per_s")),
        "redlock_minority_100ms_vs_redlock": ratio(get("redlock-minority-100ms", "cycles_per_s"),
                                                   get("redlock", "cycles_per_s")),
        "node_redlock_minority_vs_node_redlock_5_nodes": ratio(
            get("node-redlock-minority", "cycles_per_s"), get("node-redlock-redlock", "cycles_per_s")),
        "handoffs_vs_redis_py_default": ratio(get("contended", "handoffs_per_s"),
                                              get("redis-py-contended-sleep-0.1", "handoffs_per_s")),
        # The default mutex (it queues on one server) beside the fair lock
        # and the floor of a targeted handoff.
        "mutex_8_vs_fair_8": ratio(get("contended", "handoffs_per_s"),
                                   get("contended-fair", "handoffs_per_s")),
        "mutex_64_vs_floor_handoff_64": ratio(get("contended-64", "handoffs_per_s"),
                                              get("floor-handoff-64", "handoffs_per_s")),
        "mutex_64_requests_per_grant": get("contended-64", "requests_per_grant"),
        "mutex_64_min_vs_max_grants": ratio(get("contended-64", "min_grants_per_proc"),
                                            get("contended-64", "max_grants_per_proc")),
        "semaphore_requests_per_grant": get("semaphore", "requests_per_grant"),
        "semaphore_max_concurrency": get("semaphore", "max_concurrency"),
        # Fair mode against the floor of a fair handoff (bench/handoff.c),
        # and what that floor keeps without the head's acquire round trip.
        "fair_64_vs_floor_handoff_64": ratio(get("contended-fair-64", "handoffs_per_s"),
                                             get("floor-handoff-64", "handoffs_per_s")),
        "floor_handoff_64_vs_direct_64": ratio(get("floor-handoff-64", "handoffs_per_s"),
                                               get("floor-handoff-direct-64", "handoffs_per_s")),
        "handoffs_vs_best_polling_peer": ratio(
            get("contended", "handoffs_per_s"),
            max(filter(None, [get("redis-py-contended-sleep-0.001", "handoffs_per_s"),
                              get("node-redlock-contended-retry-1", "handoffs_per_s")]), default=None)),
    }
    result = {"machine": machine(), "medians": by, "ratios": ratios, "targets": TARGETS,
              "at_most": sorted(AT_MOST)}
    with open(out_json, "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    with open(out_md, "w") as f:
        f.write(markdown(by, ratios, result["machine"]))
    plots.write(by, os.path.dirname(out_md) or ".")


def fmt(v, digits=0):
    if v is None:
        return "-"
    return f"{v:,.{digits}f}"


def fmt_ratio(v):
    return "-" if v is None else f"{v:.3g}"


def markdown(by, ratios, m):
    lines = [f"Machine: {m['cpus']} CPUs, {m['cpu']}, Linux {m['kernel']}; {m['redis']}", ""]
    # dlock's counts are the first node's; the peers' runner adds up all five.
    lines += ["| uncontended (redlock: 5 nodes) | cycles/s | p50 µs | p99 µs "
              "| requests/cycle | commands/cycle | server µs/cycle |",
              "|---|---|---|---|---|---|---|"]
    for label in ["floor-minimal", "floor-null", "floor", "uncontended", "uncontended-audit", "redis-py-uncontended",
                  "node-redlock-uncontended", "redlock", "node-redlock-redlock",
                  "with-replica", "replicas-1"]:
        if label in by:
            r = by[label]
            lines.append(f"| {label} | {fmt(r.get('cycles_per_s'))} | {fmt(r.get('us_per_cycle_p50'), 1)} "
                         f"| {fmt(r.get('us_per_cycle_p99'), 1)} "
                         f"| {fmt(r.get('requests_per_cycle', r.get('client_commands_per_cycle')), 1)} "
                         f"| {fmt(r.get('commands_per_cycle'), 1)} | {fmt(r.get('server_us_per_cycle'), 1)} |")
    lines += ["", "| Redlock, 5 nodes, 2 paused | cycles/s | p50 µs | p99 µs | vs healthy | failed cycles "
              "| stalled runs |", "|---|---|---|---|---|---|---|"]
    for label, healthy in [("redlock", "redlock"), ("redlock-minority", "redlock"),
                           ("redlock-minority-100ms", "redlock"),
                           ("node-redlock-redlock", "node-redlock-redlock"),
                           ("node-redlock-minority", "node-redlock-redlock")]:
        if label in by:
            r = by[label]
            lines.append(f"| {label} | {fmt(r.get('cycles_per_s'), 1)} | {fmt(r.get('us_per_cycle_p50'), 1)} "
                         f"| {fmt(r.get('us_per_cycle_p99'), 1)} "
                         f"| {fmt_ratio(ratio(r.get('cycles_per_s'), by.get(healthy, {}).get('cycles_per_s')))} "
                         f"| {fmt(r.get('failures'))} | {fmt(r.get('stalled_runs'))} |")
    lines += ["", "| contended (8 processes; -64: 64) | grants/s | handoffs/s | wait p50 ms | wait p99 ms "
              "| handoff p50 ms | handoff p99 ms | requests/grant | commands/grant | min/max grants per process |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    # The floor-handoff rows (the floor of a fair handoff) beside them.
    for label in sorted(l for l in by if ("contended" in l and "uncontended" not in l)
                        or l.startswith("floor-handoff")):
        r = by[label]
        lines.append(
            f"| {label} | {fmt(r.get('grants_per_s'))} | {fmt(r.get('handoffs_per_s'))} "
            f"| {fmt(r.get('wait_ms_p50'), 2)} | {fmt(r.get('wait_ms_p99'), 2)} "
            f"| {fmt(r.get('handoff_ms_p50', r.get('handoff_wait_ms_p50')), 2)} "
            f"| {fmt(r.get('handoff_ms_p99', r.get('handoff_wait_ms_p99')), 2)} "
            f"| {fmt(r.get('requests_per_grant', r.get('client_commands_per_grant')), 1)} "
            f"| {fmt(r.get('commands_per_grant'), 1)} "
            f"| {fmt(r.get('min_grants_per_proc'))} / {fmt(r.get('max_grants_per_proc'))} |")
    if "semaphore" in by:
        r = by["semaphore"]
        lines += one_row_table(
            ["semaphore", "grants/s", "wait mean ms", "requests/grant", "commands/grant",
             "max concurrency", "min/max grants per process", "Jain's fairness"],
            [f"{r.get('procs')} processes, {r.get('permits')} permits, {r.get('cs_us')} µs sections",
             fmt(r.get('grants_per_s')), fmt(r.get('wait_ms_mean'), 2),
             fmt(r.get('requests_per_grant'), 2), fmt(r.get('commands_per_grant'), 1),
             fmt(r.get('max_concurrency')),
             f"{fmt(r.get('min_grants_per_proc'))} / {fmt(r.get('max_grants_per_proc'))}",
             fmt(r.get('jain_fairness'), 3)])
    if "shared" in by:
        r = by["shared"]
        lines += one_row_table(
            ["shared", "grants/s (readers / writers)", "requests/grant", "reader wait mean ms",
             "writer wait mean / max ms", "readers inside at most"],
            [f"{r.get('readers')} readers, {r.get('writers')} writer, {r.get('cs_us')} µs sections",
             f"{fmt(r.get('reader_grants_per_s'))} / {fmt(r.get('writer_grants_per_s'))}",
             fmt(r.get('requests_per_grant'), 2), fmt(r.get('reader_wait_ms_mean'), 2),
             f"{fmt(r.get('writer_wait_ms_mean'), 2)} / {fmt(r.get('writer_wait_ms_max'), 1)}",
             fmt(r.get('max_readers_inside'))])
    lines += ["", "| renewal | renewals/s | client CPU s | RSS bytes/lock | lost |", "|---|---|---|---|---|"]
    for label in sorted(l for l in by if l.startswith("renew-")):
        r = by[label]
        lines.append(f"| {label} locks, TTL 3 s | {fmt(r.get('renewals_per_s'))} | {fmt(r.get('cpu_s'), 2)} "
                     f"| {fmt(r.get('rss_bytes_per_lock'))} | {fmt(r.get('lost'))} |")
    lines += ["", "| many clients, distinct names | cycles/s |", "|---|---|"]
    for label in sorted((l for l in by if l.startswith("many-")), key=lambda l: int(l.split("-")[1])):
        lines.append(f"| {label.split('-')[1]} clients | {fmt(by[label].get('cycles_per_s'))} |")
    cluster = sorted((l for l in by if l.startswith("cluster-many-")), key=lambda l: int(l.split("-")[2]))
    if cluster:
        lines += ["", "| many on a 3-master cluster (one CPU budget) | cycles/s | MOVED replies |",
                  "|---|---|---|"]
        for label in cluster:
            lines.append(f"| {label.split('-')[2]} clients | {fmt(by[label].get('cycles_per_s'))} "
                         f"| {fmt(by[label].get('redirects'))} |")
    lines += ["", "| figure (same run) | value | target | met |", "|---|---|---|---|"]
    for k, v in ratios.items():
        target = TARGETS.get(k)
        bound = "at most " if k in AT_MOST else "at least "
        met = "-" if target is None or v is None else \
            ("yes" if (v <= target if k in AT_MOST else v >= target) else "no")
        shown = "-" if v is None else f"{v:.4g}" if k in AT_MOST else fmt_ratio(v)
        lines.append(f"| {k} | {shown} | "
                     f"{bound + fmt_ratio(target) if target is not None else '-'} | {met} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
