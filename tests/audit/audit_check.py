"""Reads what `dlock audit` wrote with real parsers, for tests/integration/test_audit.c.

  audit_check.py json FILE   the --json output: "holds N", then one line per
                             finding: "KIND A B AMOUNT_US"
  audit_check.py svg FILE    the --svg timeline, parsed by xml.etree: "svg",
                             "rects N", "texts N", then each text's words
"""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def report_json(path):
    with open(path, encoding="utf-8") as f:
        audit = json.load(f)
    print("holds", len(audit["holds"]))
    for hold in audit["holds"]:
        for key in ("token", "fence", "host", "pid", "start_us", "valid_us", "end_us", "end"):
            if key not in hold:
                sys.exit("hold without " + key)
    for finding in audit["findings"]:
        print(finding["kind"], finding["a"], finding["b"], finding["amount_us"])


def report_svg(path):
    root = ET.parse(path).getroot()
    if root.tag != SVG + "svg":
        sys.exit("root is " + root.tag)
    print("svg")
    print("rects", len(root.findall(SVG + "rect")))
    texts = root.findall(SVG + "text")
    print("texts", len(texts))
    for text in texts:
        print("text", text.text)


if __name__ == "__main__":
    {"json": report_json, "svg": report_svg}[sys.argv[1]](sys.argv[2])
