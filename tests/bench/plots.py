#!/usr/bin/env python3
"""bench/summarize.py draws both plots, as SVG a parser accepts, from the
committed results, and leaves out what a run lacks; its table of targets
says which were met.

usage: plots.py SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
from plots import short  # noqa: E402  (the label a bar's value gets)

SVG = "{http://www.w3.org/2000/svg}"


def summarize(medians, out):
    """Runs the summarizer on one measurement per label, as scripts/bench does."""
    runs = os.path.join(out, "runs.jsonl")
    with open(runs, "w") as f:
        for label, figures in medians.items():
            f.write(json.dumps(dict(figures, label=label)) + "\n")
    subprocess.run([sys.executable, os.path.join(sys.argv[1], "bench", "summarize.py"), runs,
                    os.path.join(out, "latest.json"), os.path.join(out, "latest.md")], check=True)
    return sorted(f for f in os.listdir(out) if f.endswith(".svg"))


def texts(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg", root.tag
    return [t.text for t in root.iter(SVG + "text")]


def main():
    medians = json.load(open(os.path.join(sys.argv[1], "bench", "results", "latest.json")))["medians"]
    with tempfile.TemporaryDirectory() as out:
        assert summarize(medians, out) == ["throughput.svg", "waiters.svg"]
        words = texts(os.path.join(out, "throughput.svg"))
        for expected in ["dlock", "redis-py", "node-redlock", "cycles/s", "1 node",
                         short(medians["uncontended"]["cycles_per_s"])]:
            assert expected in words, (expected, words)
        words = texts(os.path.join(out, "waiters.svg"))
        for expected in ["dlock default", "handoffs/s", "requests/grant", "8",
                         short(medians["contended"]["handoffs_per_s"])]:
            assert expected in words, (expected, words)
        # Each target is judged in its direction: a ratio must reach its
        # value, a count of AT_MOST must not pass it.
        table = open(os.path.join(out, "latest.md")).read()
        got = json.load(open(os.path.join(out, "latest.json")))["ratios"]
        for name, value, target in [("mutex_64_requests_per_grant", got["mutex_64_requests_per_grant"], 3),
                                    ("uncontended_vs_floor_minimal",
                                     got["uncontended_vs_floor_minimal"], 0.9)]:
            at_most = name.endswith("per_grant")
            met = value <= target if at_most else value >= target
            row = next(l for l in table.splitlines() if l.startswith(f"| {name} |"))
            assert row.endswith(f"| {'yes' if met else 'no'} |"), row
            assert ("at most" if at_most else "at least") in row, row
    # A run without peers nor contended workloads: throughput only, dlock only.
    dlock_only = {l: medians[l] for l in ["uncontended", "redlock", "floor"]}
    with tempfile.TemporaryDirectory() as out:
        assert summarize(dlock_only, out) == ["throughput.svg"]
        words = texts(os.path.join(out, "throughput.svg"))
        assert "dlock" in words and "redis-py" not in words, words
    print("plots: ok")


if __name__ == "__main__":
    main()
