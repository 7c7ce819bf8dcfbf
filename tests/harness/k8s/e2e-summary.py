#!/usr/bin/env python3
"""Summarises a ginkgo JSON report of tests/harness/k8s/e2e.sh.

    e2e-summary.py [--no-skips] REPORT.json[,REPORT.json...] [FOCUS_RE [SKIP_RE]]

Prints the passed specs by name, the failed specs with their failure, the specs the suite
skipped itself (with its reason), a count of those e2e-skips.txt removed, and as the LAST line
"N passed, N failed, N skipped". Skipped counts only specs the focus selected: the ones the
suite skipped when they ran (a capability the driver definition does not declare, a second
node missing, ...) and the ones the skip list removed; specs outside the focus are not
counted. Several reports (e2e.sh's parallel and serial passes) count as one run: a spec is
taken from the report in which it ran (each pass leaves the other's specs unstarted). Exit status 0 only when nothing failed and at least one spec passed (--no-skips:
and none was skipped, for a run whose every selected spec must run).
"""
import collections
import json
import re
import sys

FAILED = {"failed", "panicked", "timedout", "interrupted", "aborted"}


def merge(reports):
    """One report of several passes over the same specs: suite-level nodes of every pass, and
    each spec once, from the pass in which it started (else as the first pass has it)."""
    specs, order, others = {}, [], []
    for report in reports:
        for suite in report:
            for spec in suite.get("SpecReports") or []:
                if spec.get("LeafNodeType") != "It":
                    others.append(spec)
                    continue
                key = (tuple(spec.get("ContainerHierarchyTexts") or []), spec.get("LeafNodeText", ""))
                if key not in specs:
                    order.append(key)
                    specs[key] = spec
                elif specs[key].get("NumAttempts", 0) == 0 and spec.get("NumAttempts", 0) > 0:
                    specs[key] = spec
    return [{"SpecReports": others + [specs[k] for k in order]}]


def main():
    argv = sys.argv[1:]
    no_skips = bool(argv) and argv[0] == "--no-skips"
    if no_skips:
        argv = argv[1:]
    report = merge([json.load(open(p)) for p in argv[0].split(",")])
    focus = re.compile(argv[1]) if len(argv) > 1 and argv[1] else None
    skip = re.compile(argv[2]) if len(argv) > 2 and argv[2] else None
    passed, failed, skipped_run, skipped_list = [], [], [], []
    setup_failed = []
    for suite in report:
        for spec in suite.get("SpecReports") or []:
            kind, state = spec.get("LeafNodeType"), spec.get("State")
            text = " ".join((spec.get("ContainerHierarchyTexts") or []) + [spec.get("LeafNodeText", "")])
            if kind != "It":
                # Suite-level nodes (BeforeSuite, ReportAfterSuite, ...): a failure there fails
                # the run even though no spec is attributed.
                if state in FAILED:
                    setup_failed.append((kind, spec))
                continue
            if state == "passed":
                passed.append(text)
            elif state in FAILED:
                failed.append((text, spec))
            elif state == "skipped" and spec.get("NumAttempts", 0) > 0:
                msg = (spec.get("Failure") or {}).get("Message", "").strip().splitlines()
                skipped_run.append((text, msg[0] if msg else ""))
            elif state == "skipped":
                # Never started: outside the focus, or removed by the skip list.
                if focus and focus.search(text) and skip and skip.search(text):
                    skipped_list.append(text)
    for text in sorted(passed):
        print(f"passed: {text}")
    for kind, spec in setup_failed:
        f = spec.get("Failure") or {}
        print(f"FAILED {kind}: {f.get('Message', '').strip()[:2000]}")
    for text, spec in failed:
        f = spec.get("Failure") or {}
        loc = (f.get("Location") or {})
        print(f"FAILED [{spec.get('State')}] {text}\n    {loc.get('FileName', '')}:{loc.get('LineNumber', '')}: "
              + f.get("Message", "").strip().replace("\n", "\n    ")[:3000])
    if skipped_run:
        print(f"skipped by the suite ({len(skipped_run)}), by reason:")
        reasons = collections.Counter(re.sub(r"\d+", "N", m)[:160] for _, m in skipped_run)
        for m, n in reasons.most_common():
            print(f"  {n:4d}  {m}")
    if skipped_list:
        print(f"removed by tests/harness/k8s/e2e-skips.txt: {len(skipped_list)}")
    n_failed = len(failed) + len(setup_failed)
    n_skipped = len(skipped_run) + len(skipped_list)
    if no_skips and n_skipped:
        print(f"e2e-summary: {n_skipped} selected spec(s) skipped, and every one must run (--no-skips)")
    print(f"{len(passed)} passed, {n_failed} failed, {n_skipped} skipped")
    return 0 if n_failed == 0 and passed and not (no_skips and n_skipped) else 1


if __name__ == "__main__":
    sys.exit(main())
