#!/usr/bin/python3
"""Reads a file of Prometheus text with prometheus_client's parser (Debian's
python3-prometheus-client) and prints what it understood, for the tests to
compare with what happened: a line "# TYPE FAMILY TYPE" per family, then one
line per sample, `name{label="value",...} value`, the labels sorted and
their values as JSON strings, whole numbers without a fraction. Exits 1
with the reason when the text does not parse, or breaks a rule that the
parser lets through but Prometheus and dlock's documentation keep: every
family has HELP and TYPE and the dlock_ prefix, counters end in _total,
histograms are in seconds with cumulative buckets whose +Inf is the count,
no sample twice."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def check_histogram(family):
    buckets, counts = {}, {}
    for s in family.samples:
        rest = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        if s.name.endswith("_bucket"):
            buckets.setdefault(rest, []).append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_count"):
            counts[rest] = s.value
    for labels, series in buckets.items():
        bounds = [b for b, _ in series]
        values = [v for _, v in series]
        if bounds != sorted(bounds) or bounds[-1] != float("inf"):
            fail(f"{family.name}{labels}: buckets out of order or no +Inf")
        if values != sorted(values):
            fail(f"{family.name}{labels}: buckets not cumulative")
        if counts.get(labels) != values[-1]:
            fail(f"{family.name}{labels}: _count is not the +Inf bucket")


def main(path):
    text = open(path, encoding="utf-8").read()
    helps = {l.split()[2] for l in text.splitlines() if l.startswith("# HELP ")}
    out, seen = [], set()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own words
        fail(f"does not parse: {e}")
    for f in families:
        full = f.name + "_total" if f.type == "counter" else f.name
        if f.type == "unknown" or full not in helps:
            fail(f"{full}: no TYPE or no HELP")
        if not full.startswith("dlock_"):
            fail(f"{full}: no dlock_ prefix")
        if f.type == "histogram":
            if not f.name.endswith("_seconds"):
                fail(f"{f.name}: a histogram not in seconds")
            check_histogram(f)
        out.append(f"# TYPE {full} {f.type}")
        for s in f.samples:
            if f.type == "counter" and not s.name.endswith("_total"):
                fail(f"{s.name}: a counter without _total")
            labels = ",".join(f"{k}={json.dumps(v, ensure_ascii=False)}"
                              for k, v in sorted(s.labels.items()))
            key = f"{s.name}{{{labels}}}"
            if key in seen:
                fail(f"{key}: twice")
            seen.add(key)
            value = int(s.value) if float(s.value).is_integer() else s.value
            out.append(f"{key} {value}")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
