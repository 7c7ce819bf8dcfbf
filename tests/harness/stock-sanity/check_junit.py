#!/usr/bin/env python3
"""Checks a csi-sanity (ginkgo) JUnit report against the list of expected failures.

Usage: check_junit.py EXPECTED_FILE BUILD LABEL REPORT.xml

EXPECTED_FILE lines: BUILD<TAB>SPEC<TAB>REASON ('#' comments). SPEC is the spec's full name as
the report gives it. The run passes only when the failed specs are exactly the ones listed for
BUILD: an unexpected failure fails it, and so does a listed spec that no longer fails (take it
off the list). Prints one closing line: "LABEL: N passed, N failed, N skipped".
"""
import sys
import xml.etree.ElementTree as ET


def main():
    expected_file, build, label, report = sys.argv[1:]
    expected = {}
    with open(expected_file) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or not all(p.strip() for p in parts):
                sys.exit("%s:%d: expected BUILD<TAB>SPEC<TAB>REASON" % (expected_file, n))
            if parts[0] == build:
                expected[parts[1]] = parts[2]
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit("%s: no usable JUnit report %s: %s" % (label, report, e))
    passed, failed, skipped = [], [], []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None:
            msg = (case.find("failure") if case.find("failure") is not None else case.find("error"))
            failed.append((name, (msg.get("message") or msg.text or "").strip().splitlines()[:3]))
        elif case.find("skipped") is not None or status in ("skipped", "pending"):
            skipped.append(name)
        else:
            passed.append(name)
    ok = True
    if not passed:
        print("%s: no spec passed: the suite did not run" % label)
        ok = False
    failed_names = {n for n, _ in failed}
    for name, msg in failed:
        if name in expected:
            print("%s: expected failure: %s (%s)" % (label, name, expected[name]))
        else:
            ok = False
            print("%s: UNEXPECTED FAILURE: %s" % (label, name))
            for m in msg:
                print("    %s" % m)
    for name, reason in sorted(expected.items()):
        if name not in failed_names:
            ok = False
            print("%s: listed as an expected failure but did not fail (remove it from %s): %s"
                  % (label, expected_file, name))
    print("%s: %d passed, %d failed, %d skipped" % (label, len(passed), len(failed), len(skipped)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
