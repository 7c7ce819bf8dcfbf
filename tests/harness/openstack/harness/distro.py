"""The distribution's own RabbitMQ, epmd and MariaDB: installing the packages on a machine with
systemd (or without a policy-rc.d that forbids it) starts them, and they then hold the ports
our daemons need (5672, 25672, 4369) or just take memory. We stop and disable them.

Never touches our own daemons: Debian runs its daemons as the system users `rabbitmq`, `epmd`
and `mysql`, while ours run as root from the state directory, so a process is the distro's
only if it runs as one of those users."""

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

# systemd units that start them (epmd is socket-activated: the socket first).
UNITS = ('rabbitmq-server.service', 'epmd.socket', 'epmd.service', 'mariadb.service')
# Daemon process name -> the system users Debian runs it as.
DAEMONS = {'beam.smp': ('rabbitmq',), 'epmd': ('epmd', 'rabbitmq'), 'mariadbd': ('mysql',),
           'mysqld': ('mysql',)}
# sysvinit scripts (machines without systemd) and the daemons each one stops.
INIT_SCRIPTS = {'rabbitmq-server': ('beam.smp',), 'mariadb': ('mariadbd', 'mysqld')}


def _systemd():
    return Path('/run/systemd/system').is_dir() and shutil.which('systemctl') is not None


def _uids(names):
    out = set()
    for name in names:
        try:
            out.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    return out


def processes():
    """{pid: name} of the distro's daemons that run (see the module doc for how we tell)."""
    out = {}
    for d in Path('/proc').iterdir():
        if not d.name.isdigit():
            continue
        try:
            name = (d / 'comm').read_text().strip()
            if name not in DAEMONS:
                continue
            uid_line = next(line for line in (d / 'status').read_text().splitlines()
                            if line.startswith('Uid:'))
        except (OSError, StopIteration):
            continue
        if int(uid_line.split()[2]) in _uids(DAEMONS[name]):  # effective uid
            out[int(d.name)] = name
    return out


def _quiet(cmd, timeout=120):
    try:
        subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _terminate(pids, grace=20.0):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(Path(f'/proc/{p}').exists() for p in pids):
        time.sleep(0.2)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop():
    """Stop (and with systemd, disable) the distro's daemons. Returns what it did, for the log;
    an empty list when there was nothing to do (the usual case: a policy-rc.d kept them off)."""
    done = []
    if _systemd():
        for unit in UNITS:
            state = subprocess.run(['systemctl', 'is-enabled', unit], capture_output=True,
                                   text=True).stdout.strip()
            active = subprocess.run(['systemctl', 'is-active', '--quiet', unit]).returncode == 0
            if active or state in ('enabled', 'enabled-runtime', 'static', 'indirect'):
                _quiet(['systemctl', 'disable', '--now', '--quiet', unit])
                done.append(f'systemctl disable --now {unit}')
    running = processes()
    if running and shutil.which('service'):
        for script, names in INIT_SCRIPTS.items():
            if Path(f'/etc/init.d/{script}').exists() and set(running.values()) & set(names):
                _quiet(['service', script, 'stop'])
                done.append(f'service {script} stop')
    # Whatever is left (epmd outlives `service rabbitmq-server stop`): the distro's processes only.
    left = processes()
    if left:
        _terminate(list(left))
        done.append('ended ' + ', '.join(f'{n} (pid {p})' for p, n in sorted(left.items())))
    return done
