"""Real readiness: every API answers with auth, Cinder has a pool per backend, every RPC
service heartbeats *after* this start (old rows still say `up` for 60 s after a restart),
and Nova has mapped the compute host (os-hypervisors non-empty)."""

import datetime
import time

from . import procs
from .rest import admin
from .settings import BACKENDS, CINDER_URL, NEUTRON_URL, NOVA_URL, PLACEMENT_URL

CINDER_SERVICES = {'cinder-scheduler': 1, 'cinder-volume': len(BACKENDS), 'cinder-backup': 1}


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _fresh(services, since):
    """Count of up services per binary whose heartbeat is newer than `since` (UTC)."""
    out = {}
    for x in services:
        updated = x.get('updated_at') or ''
        if x['state'] == 'up' and updated and datetime.datetime.fromisoformat(updated[:19]) >= since:
            out[x['binary']] = out.get(x['binary'], 0) + 1
    return out


def wait_all(s, since, timeout=120.0):
    c = admin()
    since = since.replace(microsecond=0) - datetime.timedelta(seconds=2)

    def token():
        c.authenticate()
        return True

    procs.wait(s, 'keystone', token, timeout)
    procs.wait(s, 'placement', lambda: c.get(PLACEMENT_URL + '/') is not None, timeout)
    procs.wait(s, 'neutron-stub', lambda: procs.port_open(int(NEUTRON_URL.rsplit(':', 1)[1])),
               timeout)
    procs.wait(s, 'cinder-api', lambda: c.get(CINDER_URL + '/os-services') is not None, timeout)

    def pools():
        return len(c.get(CINDER_URL + '/scheduler-stats/get_pools')['pools']) >= len(BACKENDS)

    procs.wait(s, 'cinder-volume', pools, timeout, 'to report its pools')

    def services(url, want):
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = _fresh(c.get(url + '/os-services')['services'], since)
            except OSError:
                got = {}
            missing = [b for b, n in want.items() if got.get(b, 0) < n]
            if not missing:
                return
            for b in want:
                if procs.pidfile(s, b).exists() and not procs.read_pid(s, b):
                    procs.fail(s, b, 'exited before it was up')
            if time.monotonic() > deadline:
                procs.fail(s, missing[0], f'did not heartbeat within {timeout:.0f} s '
                           f'(not up: {", ".join(missing)})')
            time.sleep(0.25)

    services(CINDER_URL, CINDER_SERVICES)
    procs.wait(s, 'nova-api', lambda: c.get(NOVA_URL + '/flavors') is not None, timeout)
    computes = len(s.zones)
    services(NOVA_URL, {'nova-conductor': 1, 'nova-scheduler': 1, 'nova-compute': computes})
    procs.wait(s, 'nova-compute',
               lambda: len(c.get(NOVA_URL + '/os-hypervisors')['hypervisors']) >= computes,
               timeout, 'to be mapped to cell1 (os-hypervisors)')
