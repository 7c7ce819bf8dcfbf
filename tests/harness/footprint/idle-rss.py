#!/usr/bin/env python3
"""Idle RSS of cinder-csi binaries, attributed to mappings (docs/PERFORMANCE.md "Footprint").

    tests/harness/footprint/idle-rss.py [--mode node|controller] [--runs N] [--max-kib K] BINARY ...

The same steps as `DROP_CACHE=1 cargo bench --bench startup`: drop the binary's page cache
(posix_fadvise DONTNEED), start it on the local backend with `--log-level warn`, ask Probe,
then read VmRSS and /proc/PID/smaps. Probe is asked by `ctl probe` of a private copy of the
first binary, so the client's reads do not warm the server's file. Runs are interleaved
across the binaries. Prints, per binary, the median VmRSS and the median Rss of each mapping
(the binary's segments by permission, each shared library, [heap], [stack], other anonymous;
"(anon)" rows: the part of a file mapping's Rss that is copy-on-write copies, e.g. relocated
data), in KiB. With --max-kib, exits 1 when a binary's median VmRSS is above K KiB (the
footprint check of tests/ci/60-image.sh).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def smaps(pid, binary):
    """Rss in KiB per mapping label, summed over the mappings with that label."""
    real = os.path.realpath(binary)
    out = {}
    label = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
                perms = fields[1]
                path = fields[5] if len(fields) > 5 else ""
                if path == real:
                    label = f"binary {perms}"
                elif path.startswith("/"):
                    label = f"{os.path.basename(path)} {perms}"
                elif path:
                    label = path
                else:
                    label = "anon"
            elif fields[0] == "Rss:":
                out[label] = out.get(label, 0) + int(fields[1])
            elif fields[0] == "Anonymous:" and int(fields[1]) and label.startswith(("binary", "lib", "ld-")):
                # Copy-on-write pages of a file mapping (relocated data): not file pages.
                out[label + " (anon)"] = out.get(label + " (anon)", 0) + int(fields[1])
    return out


def vmrss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def once(binary, client, mode):
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "csi.sock")
        drop_cache(binary)
        env = dict(os.environ, CINDER_CSI_LOG_LEVEL="warn")
        p = subprocess.Popen(
            [binary, f"--mode={mode}", "--backend=local", "--node-id=n1",
             f"--local-dir={d}/local", f"--kubelet-dir={d}", f"--endpoint=unix://{sock}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                if os.path.exists(sock):
                    r = subprocess.run(
                        [client, "ctl", f"--endpoint=unix://{sock}", "--timeout=5", "probe"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    if r.returncode == 0:
                        break
                if time.monotonic() > deadline or p.poll() is not None:
                    sys.exit(f"{binary} did not answer Probe")
                time.sleep(0.001)
            return vmrss(p.pid), smaps(p.pid, binary)
        finally:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="node")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-kib", type=int)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        client = os.path.join(d, "client")
        shutil.copy(a.binaries[0], client)
        results = {b: [] for b in a.binaries}
        for _ in range(a.runs):
            for b in a.binaries:
                results[b].append(once(b, client, a.mode))
    print(f"idle RSS after the first Probe, {a.mode} mode, {a.runs} interleaved runs, "
          "page cache dropped; medians in KiB")
    labels = sorted({k for runs in results.values() for _, m in runs for k in m})
    names = [os.path.basename(b) for b in a.binaries]
    print("| mapping | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    med = lambda xs: int(statistics.median(xs))
    for label in labels:
        vals = [med([m.get(label, 0) for _, m in results[b]]) for b in a.binaries]
        if any(vals):
            print(f"| {label} | " + " | ".join(f"{v:,}" for v in vals) + " |")
    rss = [[r for r, _ in results[b]] for b in a.binaries]
    print("| **VmRSS** | " + " | ".join(f"**{med(r):,}** ({min(r):,}–{max(r):,})" for r in rss)
          + " |")
    over = [n for n, r in zip(names, rss) if a.max_kib is not None and med(r) > a.max_kib]
    if over:
        sys.exit(f"idle RSS in {a.mode} mode above {a.max_kib:,} KiB: {', '.join(over)}")


if __name__ == "__main__":
    main()
