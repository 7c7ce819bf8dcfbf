#!/usr/bin/env python3
"""Run a stripped binary and record the first call of each of its functions, in order.

    first-calls.py --map MAP --out TRACE -- BINARY ARGS...

Every function entry of the binary's .text (the input sections of the lld link map MAP: one
per function) gets a one-shot breakpoint (int3, written through /proc/PID/mem before the
program's first instruction); the first thread to reach one stops, the tracer restores the
byte, writes `PHASE ADDRESS` (link-time address, hex) to TRACE and lets it go on. So each
function costs one stop, the program runs at nearly its own speed afterwards, and the trace
is the order in which functions first ran. SIGUSR1 to the tracer starts the next phase
(0, 1, ...); SIGTERM and SIGINT are passed on to the program. Threads, forks and vforks of the program are followed (a forked child has its
own copy of the breakpoints); a child that execs another program is let go.

Why not valgrind: the node's path uses openat2, open_tree and move_mount, which the
valgrind of Debian 12 (3.19) does not know (ENOSYS, so NodeStage fails under it).
"""

import argparse
import ctypes
import os
import re
import signal
import sys

PTRACE_TRACEME, PTRACE_PEEKUSER, PTRACE_POKEUSER, PTRACE_CONT, PTRACE_DETACH = 0, 3, 6, 7, 17
PTRACE_SETOPTIONS, PTRACE_GETEVENTMSG = 0x4200, 0x4201
O_TRACEFORK, O_TRACEVFORK, O_TRACECLONE, O_TRACEEXEC, O_EXITKILL = 2, 4, 8, 0x10, 0x100000
EV_FORK, EV_VFORK, EV_CLONE, EV_EXEC = 1, 2, 3, 4
RIP = 16 * 8  # offsetof(struct user_regs_struct, rip)
WALL = 0x40000000
MAP_LINE = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (.*)$")

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, pid, addr=0, data=0):
    ctypes.set_errno(0)
    r = libc.ptrace(req, pid, addr, data)
    if r == -1 and ctypes.get_errno():
        raise OSError(ctypes.get_errno(), f"ptrace({req}, {pid})")
    return r


def entries(map_path):
    """Link-time start addresses of the named input sections of .text."""
    out = []
    in_text = False
    with open(map_path, errors="replace") as f:
        for line in f:
            m = MAP_LINE.match(line)
            if not m:
                continue
            rest = m.group(3)
            indent = len(rest) - len(rest.lstrip(" "))
            if indent == 0:
                in_text = rest.strip() == ".text"
            elif in_text and indent == 8 and ":(.text." in rest and int(m.group(2), 16):
                out.append(int(m.group(1), 16))
    return sorted(set(out))


def resume(p, sig=0):
    try:
        ptrace(PTRACE_CONT, p, 0, sig)
    except ProcessLookupError:
        pass  # killed meanwhile (SIGKILL needs no help)


class Space:
    """One address space: which breakpoints are still in it."""

    def __init__(self, mempid, armed):
        self.mempid = mempid
        self.armed = set(armed)

    def disarm(self, addr, byte):
        with open(f"/proc/{self.mempid}/mem", "r+b", buffering=0) as m:
            m.seek(addr)
            m.write(byte)
        self.armed.discard(addr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--map", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    addrs = entries(a.map)
    if not addrs:
        sys.exit(f"{a.map}: no .text input sections")

    phase = [0]
    signal.signal(signal.SIGUSR1, lambda *_: phase.__setitem__(0, phase[0] + 1))

    pid = os.fork()
    if pid == 0:
        ptrace(PTRACE_TRACEME, 0)
        os.execv(cmd[0], cmd)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _: os.kill(pid, s))
    _, st = os.waitpid(pid, WALL)
    assert os.WIFSTOPPED(st), "the program did not stop at exec"
    ptrace(PTRACE_SETOPTIONS, pid, 0,
           O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC | O_EXITKILL)

    # The binary's load address: its mapping at file offset 0.
    real = os.path.realpath(cmd[0])
    base = None
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == real and int(parts[2], 16) == 0:
                base = int(parts[0].split("-")[0], 16)
                break
    assert base is not None, f"{real} is not mapped in {pid}"

    # Arm: one int3 per function entry, the original bytes kept.
    lo, hi = base + addrs[0], base + addrs[-1] + 1
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as m:
        m.seek(lo)
        text = bytearray(m.read(hi - lo))
        original = {base + x: bytes([text[base + x - lo]]) for x in addrs}
        for x in addrs:
            text[base + x - lo] = 0xCC
        m.seek(lo)
        m.write(bytes(text))
    main_space = Space(pid, original)
    spaces = {pid: main_space}
    new_kind = {}  # child pid -> the space it gets, known from the parent's event
    pending = set()  # children stopped before their parent's event told what they are
    out = open(a.out, "w")
    seen = set()

    code = 0
    resume(pid)
    while spaces or pending:
        try:
            p, st = os.waitpid(-1, WALL)
        except ChildProcessError:
            break
        if os.WIFEXITED(st) or os.WIFSIGNALED(st):
            spaces.pop(p, None)
            if p == pid:
                code = os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)
            continue
        if not os.WIFSTOPPED(st):
            continue
        sig, event = os.WSTOPSIG(st), st >> 16
        if p not in spaces:
            if p in new_kind:
                spaces[p] = new_kind.pop(p)
                resume(p)
            else:
                pending.add(p)
            continue
        if sig == signal.SIGTRAP and event in (EV_FORK, EV_VFORK, EV_CLONE):
            msg = ctypes.c_ulong()
            ptrace(PTRACE_GETEVENTMSG, p, 0, ctypes.addressof(msg))
            child = msg.value
            parent = spaces[p]
            # A fork copies the address space (breakpoints included); vfork and threads
            # share it.
            kind = Space(child, parent.armed) if event == EV_FORK else parent
            if child in pending:
                pending.discard(child)
                spaces[child] = kind
                resume(child)
            else:
                new_kind[child] = kind
            resume(p)
            continue
        if sig == signal.SIGTRAP and event == EV_EXEC:
            if p != pid:
                spaces.pop(p, None)
                ptrace(PTRACE_DETACH, p, 0, 0)
            else:
                resume(p)
            continue
        if sig == signal.SIGTRAP and event == 0:
            rip = ptrace(PTRACE_PEEKUSER, p, RIP, 0) & 0xFFFFFFFFFFFFFFFF
            hit = rip - 1
            if hit in original:
                space = spaces[p]
                if hit in space.armed:
                    space.disarm(hit, original[hit])
                    if hit not in seen:
                        seen.add(hit)
                        out.write(f"{phase[0]} {hit - base:x}\n")
                ptrace(PTRACE_POKEUSER, p, RIP, hit)
                resume(p)
                continue
        resume(p, 0 if event else sig)
    out.close()
    print(f"first-calls: {len(seen)} of {len(addrs)} functions ran", file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
