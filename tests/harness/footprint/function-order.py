#!/usr/bin/env python3
"""Symbol ordering file for lld from first-call traces of a stripped binary plus its link map.

Run by tests/harness/footprint/function-order.sh, which documents the phases; usable alone:

    function-order.py --map MAP --phase "LABEL=TRACE:N[,TRACE:N...]" ... (--write OUT | --check OUT)

TRACE is what first-calls.py wrote for a binary of the link that MAP (lld -Map) describes, N
a phase number in it; several traces of one phase are merged (the first one's order, then
what the others add). With one input section per function (`.text.<mangled name>`, what
rustc emits), the section at a function's address names it. Writes the functions that ran,
phase by phase in the order the --phase options give, each once, in the order they first
ran within a phase.
"""

import argparse
import re
import sys

# ThinLTO renames a local function that another module imports to `NAME.llvm.HASH`, HASH
# a hash of its module's code, which holds the paths of the sources of registry crates
# (panic locations): a checkout with another CARGO_HOME or path gets other hashes.
LLVM_SUFFIX = re.compile(r"\.llvm\.[0-9]+$")
MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (.*)$")


def pattern(section):
    """The section's name as a linker-script pattern that matches it in any checkout."""
    return LLVM_SUFFIX.sub(".llvm.*", section)


def read_map(path):
    """Input sections of the output section .text: sorted (start, size, pattern or None);
    None for a section that holds more than one function (e.g. assembly's plain .text)."""
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
            name = pattern(sect) if sect.startswith(".text.") else None
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
    ap.add_argument("--phase", action="append", required=True, metavar="LABEL=TRACE:N,...")
    ap.add_argument("--text-window", type=int, default=65536)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="OUT")
    g.add_argument("--check", metavar="OUT")
    ap.add_argument("--max-windows", type=int,
                    help="--check fails when the first phase spans more windows of .text "
                    "(default: 8 more than its functions fill)")
    a = ap.parse_args()

    sections = read_map(a.map)
    at = section_index(sections)
    order = []
    seen = set()
    report = []
    for spec in a.phase:
        label, _, rest = spec.partition("=")
        ran = []
        for one in rest.split(","):
            path, _, n = one.rpartition(":")
            addrs = read_trace(path, int(n))
            if any(x not in at for x in addrs):
                sys.exit(f"{path}: addresses that are no function entry of {a.map} "
                         "(trace and map of different links?)")
            ran.extend(at[x] for x in addrs)
        ran = list(dict.fromkeys(ran))
        new = [i for i in ran if i not in seen]
        seen.update(new)
        order.extend((i, label) for i in new)
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

    unnamed = sum(1 for i, _ in order if not sections[i][2])
    if unnamed:
        print(f"{unnamed} functions that ran are in sections of several functions "
              "(not ordered)")
    listed = {}  # pattern -> the phase it first ran in
    for i, label in order:
        if sections[i][2]:
            listed.setdefault(sections[i][2], label)
    listed = list(listed.items())
    if a.write:
        write_script(a.write, listed)
        print(f"wrote {len(listed)} functions to {a.write}")
        return
    have = read_script(a.check)
    names = {s[2] for s in sections if s[2]}
    gone = [n for n in have if n not in names]
    wanted = dict.fromkeys(n for n, _ in listed)
    missing = [n for n in wanted if n not in set(have)]
    print(f"{a.check}: {len(have)} functions, {len(gone)} not in this build, "
          f"{len(missing)} of the {len(wanted)} that ran are not listed")
    for n in missing[:10]:
        print(f"  not listed: {n}")
    # What matters is the layout: functions renamed or new since the script was made land
    # elsewhere in .text, each in a window of its own. A few do on every run (which of
    # tokio's task types drop first varies).
    label, _, _, size, w = report[0]
    ideal = -(-size // a.text_window)
    limit = a.max_windows if a.max_windows is not None else ideal + 8
    print(f"{label}: its functions span {w} windows of .text, {ideal} if contiguous "
          f"(check: at most {limit})")
    if w > limit:
        sys.exit(1)


HEADER = """\
/* The order of the release binary's functions in .text, passed to the link by build.rs.
   Generated by tests/harness/footprint/function-order.sh (which says why and when to regenerate it):
   the functions that ran in each phase, in the order they first ran; the rest after them
   as the linker lays them out by default. Names this build lacks match nothing. */
SECTIONS
{
  .text : {
"""
FOOTER = """\
    *(.text .text.*)
  }
}
INSERT BEFORE .init;
"""


def write_script(path, listed):
    with open(path, "w") as f:
        f.write(HEADER)
        last = None
        for name, label in listed:
            if label != last:
                f.write(f"    /* {label} */\n")
                last = label
            f.write(f"    *({name})\n")
        f.write(FOOTER)


def read_script(path):
    with open(path) as f:
        found = re.findall(r"^\s*\*\((\S+)\)$", f.read(), re.M)
    return [n for n in found if n != ".text .text.*"]


if __name__ == "__main__":
    main()
