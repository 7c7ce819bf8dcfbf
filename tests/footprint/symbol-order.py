#!/usr/bin/env python3
"""Symbol ordering file for lld from first-call traces of a stripped binary plus its link map.

Run by tests/footprint/symbol-order.sh, which documents the phases; usable alone:

    symbol-order.py --map MAP --phase "LABEL=TRACE:N" ... (--write OUT | --check OUT)

TRACE is what first-calls.py wrote for a binary of the link that MAP (lld -Map) describes, N
a phase number in it. With one input section per function (`.text.<mangled name>`, what
rustc emits), the section at a function's address names it. Writes the functions that ran,
phase by phase in the order the --phase options give, each once, in the order they first
ran within a phase.
"""

import argparse
import re
import sys

TEXT_PREFIXES = (".text.unlikely.", ".text.hot.", ".text.startup.", ".text.exit.",
                 ".text.split.", ".text.")
MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (.*)$")


def read_map(path):
    """Input sections of the output section .text: sorted (start, size, symbol or None)."""
    sections = []
    in_text = False
    with open(path, errors="replace") as f:
        for line in f:
            m = MAP_LINE.match(line)
            if not m:
                continue
            rest = m.group(3)
            indent = len(rest) - len(rest.lstrip(" "))
            if indent == 0:
                in_text = rest.strip() == ".text"
                continue
            if not in_text or indent != 8:
                continue
            sect = rest.strip().rpartition(":(")[2].rstrip(")")
            name = None
            for p in TEXT_PREFIXES:
                if sect.startswith(p):
                    name = sect[len(p):]
                    break
            sections.append((int(m.group(1), 16), int(m.group(2), 16), name))
    sections.sort()
    if not sections:
        sys.exit(f"{path}: no .text input sections (not an lld -Map file?)")
    return sections


def read_trace(path, phase):
    """Link-time addresses first called in `phase` of a first-calls.py trace, in order."""
    out = []
    with open(path) as f:
        for line in f:
            p, _, addr = line.partition(" ")
            if int(p) == phase:
                out.append(int(addr, 16))
    return out


def section_index(sections):
    return {s[0]: i for i, s in enumerate(sections)}


def windows(idx, sections, window):
    w = set()
    for i in idx:
        start, size, _ = sections[i]
        w.update(range(start // window, (start + max(size, 1) - 1) // window + 1))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--map", required=True)
    ap.add_argument("--phase", action="append", required=True, metavar="LABEL=TRACE:N")
    ap.add_argument("--text-window", type=int, default=65536)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="OUT")
    g.add_argument("--check", metavar="OUT")
    a = ap.parse_args()

    sections = read_map(a.map)
    names = {s[2] for s in sections if s[2]}
    at = section_index(sections)
    order = []
    seen = set()
    report = []
    for spec in a.phase:
        label, _, rest = spec.partition("=")
        path, _, n = rest.rpartition(":")
        addrs = read_trace(path, int(n))
        ran = [at[x] for x in addrs if x in at]
        if len(ran) < len(addrs):
            sys.exit(f"{path}: {len(addrs) - len(ran)} addresses are no function entry of "
                     f"{a.map} (trace and map of different links?)")
        new = [i for i in ran if i not in seen]
        seen.update(new)
        order.extend(new)
        size = sum(sections[i][1] for i in ran)
        report.append((label, len(ran), len(new), size,
                       len(windows(ran, sections, a.text_window))))

    total = sum(s[1] for s in sections)
    print(f"{len(sections)} input sections in .text, {total / 1024:,.0f} KiB")
    print("| phase | functions run | new | their size | 64 KiB windows of .text they span "
          "in this link |")
    print("|---|---:|---:|---:|---:|")
    for phase, n, new, size, w in report:
        print(f"| {phase} | {n} | {new} | {size / 1024:,.0f} KiB | {w} |")

    listed = [sections[i][2] for i in order if sections[i][2]]
    unnamed = sum(1 for i in order if not sections[i][2])
    if unnamed:
        print(f"{unnamed} functions that ran are in sections without a symbol name "
              "(not ordered)")
    if a.write:
        with open(a.write, "w") as f:
            f.write("".join(n + "\n" for n in dict.fromkeys(listed)))
        print(f"wrote {len(set(listed))} symbols to {a.write}")
    else:
        with open(a.check) as f:
            have = [line.strip() for line in f if line.strip()]
        gone = [n for n in have if n not in names]
        missing = [n for n in dict.fromkeys(listed) if n not in set(have)]
        print(f"{a.check}: {len(have)} symbols, {len(gone)} not in this build, "
              f"{len(missing)} functions that ran are not listed")
        if gone or missing:
            sys.exit(1)


if __name__ == "__main__":
    main()
