"""`ostack up|down|status|purge`: start order, readiness, teardown. Timings are printed per
phase so CI logs show where the time goes."""

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from . import bootstrap, distro, identity, loops, outputs, procs, ready, render, seed
from .procs import ServiceError
from .settings import HERE, PORTS

RMQ = Path('/usr/lib/rabbitmq/bin')
# Started in this order; stopped in reverse (OpenStack services all at once).
OPENSTACK = ['keystone', 'neutron-stub', 'cinder-scheduler', 'cinder-volume', 'cinder-backup',
             'nova-conductor', 'placement', 'cinder-api', 'nova-api', 'nova-scheduler',
             'nova-compute']
INFRA = ['rabbitmq', 'mariadb', 'epmd']


class Clock:
    def __init__(self, what):
        self.what = what
        self.t0 = self.t = time.monotonic()

    def phase(self, name):
        now = time.monotonic()
        print(f'ostack {self.what}: {name} in {now - self.t:.1f} s', flush=True)
        self.t = now

    def total(self):
        return time.monotonic() - self.t0


def _installed(s):
    if not (s.venv / '.ostack-installed').exists():
        raise ServiceError(f'ostack: no cloud installed in {s.venv}: run `ostack install` first')


def _oslo(s, name, conf):
    return [s.bin(name), '--config-file', conf, '--log-file', s.log / f'{name}.log']


def _start_infra(s, fresh):
    procs.start(s, 'epmd', ['epmd', '-address', '127.0.0.1', '-port', PORTS['epmd']])
    if fresh:
        bootstrap.mariadb_datadir(s)
    procs.start(s, 'mariadb', [
        'mariadbd', '--no-defaults', f'--datadir={s.mysql}', f'--socket={s.db_socket}',
        f'--pid-file={s.run / "mariadbd.pidfile"}', '--skip-networking', '--user=root',
        '--skip-name-resolve', '--innodb-buffer-pool-size=64M', '--max-connections=500',
        f'--log-error={s.log / "mariadb.log"}'])
    procs.wait(s, 'epmd', lambda: procs.port_open(PORTS['epmd']), 20, 'to listen')
    procs.start(s, 'rabbitmq', [RMQ / 'rabbitmq-server'], env=render.rabbitmq_env(s))
    procs.wait(s, 'mariadb', lambda: s.db_socket.is_socket() and subprocess.run(
        ['mariadb-admin', '--no-defaults', '-S', s.db_socket, '-uroot', 'ping'],
        capture_output=True).returncode == 0, 60, 'to accept connections')


def _start_openstack(s, fresh, clock):
    cinder, nova = render.cinder_conf(s), render.nova_conf(s)
    cinder_env = {'PYTHONPATH': str(render.DRIVER_DIR)}
    uwsgi = s.bin('uwsgi')
    # Need no Keystone user to start: Keystone itself, the stub, Cinder's RPC services.
    procs.start(s, 'keystone', [uwsgi, '--ini', s.etc / 'keystone-uwsgi.ini'])
    procs.start(s, 'neutron-stub', [s.bin('python'), HERE / 'neutron_stub.py',
                                    PORTS['neutron-stub']])
    for name in ('cinder-scheduler', 'cinder-volume', 'cinder-backup'):
        procs.start(s, name, _oslo(s, name, cinder), env=cinder_env)
    if fresh:
        # The nova services authenticate as soon as they start: their users must exist.
        procs.wait(s, 'keystone', lambda: procs.port_open(PORTS['keystone']), 90, 'to listen')
        _retry(identity.seed, 'keystone', s)
        clock.phase('keystone seeded (users, roles, catalog)')
    procs.start(s, 'nova-conductor', _oslo(s, 'nova-conductor', nova))
    procs.start(s, 'placement', [uwsgi, '--ini', s.etc / 'placement-uwsgi.ini'])
    procs.start(s, 'cinder-api', [uwsgi, '--ini', s.etc / 'cinder-api-uwsgi.ini'])
    procs.start(s, 'nova-api', [uwsgi, '--ini', s.etc / 'nova-api-uwsgi.ini'])
    procs.start(s, 'nova-scheduler', _oslo(s, 'nova-scheduler', nova))
    # nova-compute stalls 10 s when it starts before the conductor consumes its queue.
    procs.wait(s, 'nova-conductor', lambda: _conductor_consuming(s), 90, 'to consume its queue',
               interval=1.0)
    procs.start(s, 'nova-compute', _oslo(s, 'nova-compute', nova))
    for zone in s.zones[1:]:
        name = s.compute_service(zone)
        procs.start(s, name, [s.bin('nova-compute'), '--config-file', nova, '--config-file',
                              s.etc / 'nova' / f'{name}.conf', '--log-file', s.log / f'{name}.log'])


def openstack_services(s):
    return OPENSTACK + [s.compute_service(z) for z in s.zones[1:]]


def _retry(fn, name, s, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except OSError:
            if time.monotonic() > deadline:
                procs.fail(s, name, 'did not answer')
            time.sleep(0.5)


def _conductor_consuming(s):
    r = subprocess.run([RMQ / 'rabbitmqctl', '-q', 'list_queues', 'name', 'consumers'],
                       capture_output=True, text=True, env=dict(os.environ, **render.rabbitmq_env(s)))
    return any(line.split()[:1] == ['conductor'] and int(line.split()[1]) > 0
               for line in r.stdout.splitlines() if len(line.split()) == 2)


def restart_apis(s):
    """Restart cinder-api and nova-api only, with OSTACK_API_PROCESSES / OSTACK_API_THREADS
    (unset: the defaults). Callers hold `flock -x /var/tmp/cinder-csi-ostack.lock`."""
    alive = procs.running(s)
    if not {'cinder-api', 'nova-api'} <= set(alive):
        raise ServiceError('ostack restart-apis: the cloud is not up')
    render.cinder(s)
    render.nova(s)
    procs.stop_many(s, ['cinder-api', 'nova-api'])
    uwsgi = s.bin('uwsgi')
    for name, port in (('cinder-api', PORTS['cinder-api']), ('nova-api', PORTS['nova-api'])):
        procs.start(s, name, [uwsgi, '--ini', s.etc / f'{name}-uwsgi.ini'])
        procs.wait(s, name, lambda port=port: _answers(port), 120, 'to answer')
    for name, default in (('cinder-api', 8), ('nova-api', 4)):
        p, t = render.api_workers(default)
        print(f'ostack restart-apis: {name} runs {p} process(es) x {t} thread(s)', flush=True)


def _answers(port):
    """The API's application is loaded: its version document answers (any HTTP status)."""
    try:
        urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=5)
    except urllib.error.HTTPError:
        pass
    except OSError:
        return False
    return True


def up(s):
    _installed(s)
    clock = Clock('up')
    alive = procs.running(s)
    if alive:
        if set(alive) >= set(openstack_services(s) + INFRA + ['hypervisor']) and \
                s.env_file.exists():
            print(f'ostack up: already up ({len(alive)} daemons); env: {s.env_file}')
            return
        raise ServiceError('ostack: partly running (' + ', '.join(sorted(alive)) +
                           '): run `ostack down` first')
    for what in distro.stop():  # the distro's rabbitmq/epmd/mariadb would hold our ports
        print(f'ostack up: stopped the distribution\'s daemons: {what}', flush=True)
    procs.check_ports_free(PORTS)
    fresh = not (s.state / 'initialized').exists()
    if fresh:  # never initialised, or an init that failed half-way: start from nothing
        _wipe(s)
    s.mkdirs()
    render.write_all(s)
    s.env_file.unlink(missing_ok=True)
    try:
        _start_infra(s, fresh)
        clock.phase('mariadb up' + (' (new data dir)' if fresh else ''))
        if fresh:
            bootstrap.databases(s)
            bootstrap.schemas(s)
            clock.phase('schemas created (keystone, cinder, placement, nova in parallel)')
        procs.wait(s, 'rabbitmq', lambda: procs.port_open(PORTS['rabbitmq']), 90, 'to listen')
        clock.phase('rabbitmq up')
        since = ready.utc_now()
        _start_openstack(s, fresh, clock)
        clock.phase('all services started')
        ready.wait_all(s, since)
        clock.phase('all services ready (pools, heartbeats, hypervisor mapping)')
        (s.state / 'initialized').touch()
        app_cred = identity.app_credential(s)
        nodes = seed.cloud(s)
        clock.phase('seeded')
        current = {n['name'] for n in nodes}
        for d in s.nodes_dir.iterdir():  # nodes of an earlier, larger OSTACK_NODE_COUNT
            if d.name not in current:
                shutil.rmtree(d)
        procs.start(s, 'hypervisor', [sys.executable, HERE / 'hypervisor.py', s.state])
        procs.wait(s, 'hypervisor', lambda: _serves(nodes[0]['metadata_url']) and
                   (s.run / 'hypervisor.ready').exists(), 30,
                   'to serve metadata and follow the attachments')
        env = outputs.write_all(s, app_cred, nodes)
        clock.phase('test hypervisor + metadata service up')
    except BaseException:
        if os.environ.get('OSTACK_KEEP_ON_FAILURE') != '1':
            print('ostack up: failed; stopping what was started (logs stay in '
                  f'{s.log}; OSTACK_KEEP_ON_FAILURE=1 keeps it running)', file=sys.stderr)
            down(s, quiet=True)
        raise
    print(f'ostack up: ready in {clock.total():.1f} s; env file: {env}')


def down(s, quiet=False):
    clock = Clock('down')
    if not s.state.exists():
        print(f'ostack down: nothing to do ({s.state} does not exist)')
        return
    killed = procs.stop_many(s, ['hypervisor'], grace=20)
    clock.phase('hypervisor stopped (links and loop devices removed)')
    # Every compute a previous `up` may have started, whatever OSTACK_NODE_COUNT is now.
    computes = sorted(f.stem for f in s.run.glob('nova-compute-*.pid'))
    killed += procs.stop_many(s, computes + list(reversed(OPENSTACK)), grace=15)
    clock.phase('OpenStack services stopped')
    killed += procs.stop_many(s, ['rabbitmq', 'mariadb'], grace=30)
    killed += procs.stop_many(s, ['epmd'], grace=5)
    clock.phase('rabbitmq, mariadb, epmd stopped')
    if killed and not quiet:
        print(f'ostack down: needed SIGKILL: {", ".join(killed)}', file=sys.stderr)
    swept = sweep(s)
    if swept and not quiet:
        print('ostack down: cleaned up after a crash or a failed test:\n  ' +
              '\n  '.join(swept), file=sys.stderr)
    leftovers = _our_processes(s)
    if leftovers:
        raise ServiceError('ostack down: processes still running: ' + ', '.join(leftovers))
    print(f'ostack down: stopped in {clock.total():.1f} s; no process, loop device or mount '
          'of the test cloud left')


def sweep(s):
    """Whatever the hypervisor did not get to remove: mounts of our loop devices, the loop
    devices themselves, by-id links, stray processes of ours."""
    done = []
    for dev, f in loops.owned(s.state).items():
        for m in loops.unmount_all(dev):
            done.append(f'unmounted {m} ({dev})')
        if loops.detach(dev, f):
            done.append(f'detached {dev} ({f})')
    for link in s.nodes_dir.glob('*/by-id/*'):
        link.unlink()
        done.append(f'removed link {link}')
    for pid_cmd in _our_processes(s):
        pid = int(pid_cmd.split()[0])
        try:
            os.kill(pid, signal.SIGKILL)
            done.append(f'killed stray process {pid_cmd}')
        except ProcessLookupError:
            pass
    time.sleep(0.2 if done else 0)
    return done


def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _our_processes(s):
    """Daemons of this cloud that escaped their process group: their command line runs from
    our venv or names our config, data or scripts (a `tail -f` of a log is not matched)."""
    marks = (f'{s.venv}/', f'{s.etc}/', f'--datadir={s.mysql}', f'{s.rabbitmq}',
             str(HERE / 'hypervisor.py'), str(HERE / 'neutron_stub.py'))
    skip = _ancestors()
    out = []
    for p in Path('/proc').iterdir():
        if not p.name.isdigit() or int(p.name) in skip:
            continue
        try:
            cmd = (p / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if any(m in cmd for m in marks):
            out.append(f'{p.name} {cmd[:120].strip()}')
    return out


def status(s):
    alive = procs.running(s)
    want = INFRA[::-1] + openstack_services(s) + ['hypervisor']
    print(f'state: {s.state}')
    for name in want:
        print(f'  {name:18s} {"pid " + str(alive[name]) if name in alive else "not running"}')
    owned = loops.owned(s.state)
    print(f'loop devices: {len(owned)}' + ''.join(f'\n  {d} -> {f}' for d, f in owned.items()))
    for link in sorted(s.nodes_dir.glob('*/by-id/*')):
        print(f'  link {link} -> {os.readlink(link)}')
    ok = set(want) <= set(alive) and s.env_file.exists()
    print(f'env file: {s.env_file if s.env_file.exists() else "(none)"}')
    print('cloud: ' + ('up' if ok else 'down' if not alive else 'partly up'))
    return 0 if ok else 3


def _wipe(s):
    """Delete the cloud's state, keeping the virtualenv."""
    for p in s.state.iterdir() if s.state.exists() else []:
        if p != s.venv:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _serves(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def purge(s):
    down(s)
    _wipe(s)
    print(f'ostack purge: removed the cloud state in {s.state} (kept {s.venv})')
