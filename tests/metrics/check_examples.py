#!/usr/bin/python3
"""Checks the monitoring examples: the Grafana dashboard is valid JSON and
the alerting rules valid YAML (Debian's python3-yaml), every query's
brackets balance, and every dlock metric a query names is one that
docs/operations.md documents (and so one the library exports: test_metrics
checks that every family it writes is documented there).
Usage: check_examples.py SOURCE_DIR"""
import json
import re
import sys

import yaml


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def documented(source):
    text = open(f"{source}/docs/operations.md", encoding="utf-8").read()
    return set(re.findall(r"`(dlock_[a-z_]+)`", text))


def balanced(expr):
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for ch in re.sub(r'"[^"]*"', '""', expr):
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack


def check(where, expr, names):
    if not balanced(expr):
        fail(f"{where}: unbalanced brackets in {expr}")
    used = re.findall(r"\b(dlock_[a-z_]+)", expr)
    if not used:
        fail(f"{where}: no dlock metric in {expr}")
    for name in used:
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        if family not in names:
            fail(f"{where}: {name} is not a documented metric")


def main(source):
    names = documented(source)
    if not names:
        fail("docs/operations.md documents no metric")
    dashboard = json.load(open(f"{source}/examples/monitoring/grafana-dashboard.json"))
    panels = dashboard["panels"]
    for p in panels:
        if not p.get("targets"):
            fail(f"panel {p.get('title')}: no query")
        for t in p["targets"]:
            check(f"panel {p['title']}", t["expr"], names)
    queries = " ".join(t["expr"] for p in panels for t in p["targets"])
    for needed in ("histogram_quantile(0.5, ", "histogram_quantile(0.99, ", "dlock_wait_seconds_bucket",
                   "dlock_hold_seconds_bucket", "dlock_busy_total", "dlock_losses_total"):
        if needed not in queries:
            fail(f"the dashboard has no query with {needed}")
    rules = yaml.safe_load(open(f"{source}/examples/monitoring/alerts.yml"))
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    for r in alerts:
        if not r.get("alert") or not r.get("expr"):
            fail(f"a rule without alert or expr: {r}")
        check(f"alert {r['alert']}", r["expr"], names)
    exprs = " ".join(r["expr"] for r in alerts)
    if "dlock_losses_total" not in exprs or "histogram_quantile(0.99" not in exprs:
        fail("the rules alert on neither losses nor the wait's p99")


if __name__ == "__main__":
    main(sys.argv[1])
