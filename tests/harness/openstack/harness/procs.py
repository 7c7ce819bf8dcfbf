"""Daemons by pid file: each runs in its own session, so its process group holds all of its
children (uWSGI workers, privsep helpers, cinder-volume backend processes) and `stop` ends
exactly that group. The pid file also records the process start time so a stale file can never
make us signal someone else's process after a pid is reused."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from .settings import loopback_no_proxy


class ServiceError(SystemExit):
    """A service that did not start or become ready: message plus the tail of its logs."""


def _start_time(pid):
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
    except OSError:
        return None
    return stat.rsplit(')', 1)[1].split()[19]  # field 22: starttime in clock ticks


def pidfile(s, name):
    return s.run / f'{name}.pid'


def read_pid(s, name):
    """The pid of `name` if it is the very process we started and it still runs."""
    try:
        pid, started = pidfile(s, name).read_text().split()
        pid = int(pid)
    except (OSError, ValueError):
        return None
    return pid if _start_time(pid) == started else None


def running(s):
    """{name: pid} of every daemon of ours that is alive."""
    out = {}
    for f in sorted(s.run.glob('*.pid')):
        pid = read_pid(s, f.stem)
        if pid:
            out[f.stem] = pid
    return out


def start(s, name, cmd, env=None, cwd=None):
    if read_pid(s, name):
        raise ServiceError(f'ostack: {name} is already running (pid {read_pid(s, name)})')
    # Where each log ends now, so a failure shows only what this start wrote.
    marks = {rel: (s.log / rel).stat().st_size for rel in _logs(name) if (s.log / rel).exists()}
    (s.run / f'{name}.logpos').write_text(json.dumps(marks))
    out = open(s.log / f'{name}.out', 'ab')
    full_env = loopback_no_proxy(dict(os.environ, PYTHONWARNINGS='ignore', **(env or {})))
    p = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=out,
                         stderr=subprocess.STDOUT, env=full_env, cwd=cwd or s.state,
                         start_new_session=True)
    out.close()
    pidfile(s, name).write_text(f'{p.pid} {_start_time(p.pid)}\n')
    return p.pid


def _group_alive(pgid):
    try:  # reap the leader if it is our child (down after a failed up): zombies count as alive
        os.waitpid(pgid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_many(s, names, grace=15.0):
    """TERM each daemon (its leader only: uWSGI workers that get TERM themselves reload
    instead of exiting; oslo launchers and the rabbitmq script pass TERM on), wait until each
    whole process group is gone, KILL the groups that are not. Returns what needed KILL."""
    groups = {}
    for name in names:
        pid = read_pid(s, name)
        if pid:
            groups[name] = pid
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_group_alive(p) for p in groups.values()):
        time.sleep(0.1)
    killed = []
    for name, pid in groups.items():
        if _group_alive(pid):
            killed.append(name)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for name, pid in groups.items():
        for _ in range(50):
            if not _group_alive(pid):
                break
            time.sleep(0.1)
    for name in names:
        pidfile(s, name).unlink(missing_ok=True)
    return killed


# Log files worth showing when a service fails, besides its own `<name>.out`.
LOGS = {
    'mariadb': ['mariadb.log'], 'rabbitmq': ['rabbitmq/rabbit@localhost.log'],
    'keystone': ['keystone.log'], 'placement': ['placement-api.log'],
    'cinder-api': ['cinder-api.log'], 'cinder-scheduler': ['cinder-scheduler.log'],
    'cinder-volume': ['cinder-volume.log'], 'cinder-backup': ['cinder-backup.log'],
    'nova-api': ['nova-api.log'], 'nova-conductor': ['nova-conductor.log'],
    'nova-scheduler': ['nova-scheduler.log'], 'nova-compute': ['nova-compute.log'],
    'nova-compute-az2': ['nova-compute-az2.log'],
    'hypervisor': ['hypervisor.log'],
}


def _logs(name):
    return [f'{name}.out'] + LOGS.get(name, [])


def tail(s, name, lines=25):
    """The last lines each log of `name` got since its latest start."""
    try:
        marks = json.loads((s.run / f'{name}.logpos').read_text())
    except (OSError, ValueError):
        marks = {}
    out = []
    for rel in _logs(name):
        f = s.log / rel
        if not f.exists():
            continue
        with open(f, 'rb') as fh:
            fh.seek(marks.get(rel, 0))
            text = fh.read().decode(errors='replace').splitlines()[-lines:]
        if text:
            out.append(f'--- last {len(text)} lines of {f}:\n' + '\n'.join(text))
        else:
            out.append(f'--- {f}: nothing written since this start')
    return '\n'.join(out) or f'(no log for {name} in {s.log})'


def fail(s, name, why):
    raise ServiceError(f'ostack: {name} {why}\n{tail(s, name)}')


def wait(s, name, check, timeout, what='to become ready', interval=0.25):
    """Poll `check()` until true; fail with the service's log tail if it dies or times out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if pidfile(s, name).exists() and not read_pid(s, name):
            fail(s, name, f'exited while we waited for it {what}')
        if time.monotonic() > deadline:
            fail(s, name, f'did not {what.removeprefix("to ")} within {timeout:.0f} s')
        time.sleep(interval)


def port_open(port, host='127.0.0.1'):
    with socket.socket() as sk:
        sk.settimeout(1)
        return sk.connect_ex((host, port)) == 0


def check_ports_free(ports):
    """Fail with the owner of every port that is already taken."""
    taken = []
    for name, port in ports.items():
        with socket.socket() as sk:
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sk.bind(('127.0.0.1', port))
            except OSError:
                who = subprocess.run(['ss', '-Hltnp', f'sport = :{port}'],
                                     capture_output=True, text=True).stdout.strip()
                taken.append(f'  {port} ({name}): {who or "in use"}')
    if taken:
        raise ServiceError('ostack: ports the test cloud needs are taken (another cloud running? '
                           'try `ostack down`, or stop the owner):\n' + '\n'.join(taken))
