"""What the tests need in Cinder and Nova: volume types, lifted quotas, a flavor, and one
server per test node, booted from a volume (servers are per run: the fake compute driver keeps
instances in memory only, so each `up` replaces the previous run's servers)."""

import json
import time
from concurrent.futures import ThreadPoolExecutor

from .identity import project_id
from .rest import admin, member
from .settings import (ALT_VOLUME_TYPE, BACKENDS, CINDER_URL, COMPUTE_HOSTS, FLAVOR,
                       GROUP_TYPE, GROUP_VOLUME_TYPE, INCONSISTENT_GROUP_TYPE, MEMBER,
                       MULTIATTACH_TYPE, NOVA_URL, VOLUME_TYPE)

UNLIMITED_CINDER = ('volumes', 'snapshots', 'gigabytes', 'backups', 'backup_gigabytes',
                    'per_volume_gigabytes', 'groups')
UNLIMITED_NOVA = ('instances', 'cores', 'ram', 'key_pairs', 'server_groups',
                  'server_group_members', 'metadata_items')


def _flavor(c):
    flavors = c.get(NOVA_URL + '/flavors')['flavors']
    for f in flavors:
        if f['name'] == FLAVOR:
            return f['id']
    return c.post(NOVA_URL + '/flavors', {'flavor': {
        'name': FLAVOR, 'ram': 512, 'vcpus': 1, 'disk': 1}})['flavor']['id']


def _volume_type(c, name, extra_specs, description):
    for t in c.get(CINDER_URL + '/types?is_public=None')['volume_types']:
        if t['name'] == name:
            tid = t['id']
            break
    else:
        tid = c.post(CINDER_URL + '/types', {'volume_type': {
            'name': name, 'description': description,
        }})['volume_type']['id']
    # Only what differs: Cinder refuses any extra-spec write on a type that volumes use
    # ("Volume Type is currently in use"), even the same value, and a cloud brought up again
    # keeps its volumes.
    have = c.get(f'{CINDER_URL}/types/{tid}/extra_specs')['extra_specs'] if extra_specs else {}
    missing = {k: v for k, v in extra_specs.items() if have.get(k) != v}
    if missing:
        c.post(f'{CINDER_URL}/types/{tid}/extra_specs', {'extra_specs': missing})
    return tid


def _group_type(c, name, group_specs, description):
    """A public group type (3.11) with exactly `group_specs`."""
    for t in c.get(CINDER_URL + '/group_types?is_public=None')['group_types']:
        if t['name'] == name:
            tid = t['id']
            break
    else:
        tid = c.post(CINDER_URL + '/group_types', {'group_type': {
            'name': name, 'description': description, 'is_public': True,
        }})['group_type']['id']
    if group_specs:
        c.post(f'{CINDER_URL}/group_types/{tid}/group_specs', {'group_specs': group_specs})
    return tid


def _delete_old_servers(c, names):
    old = [x for x in c.get(NOVA_URL + '/servers?all_tenants=1')['servers'] if x['name'] in names]
    for x in old:
        c.delete(f'{NOVA_URL}/servers/{x["id"]}')
    for x in old:
        c.wait_status(f'{NOVA_URL}/servers/{x["id"]}', 'server', 'deleted', timeout=60)
    return len(old)


def _zones(c, s):
    """One host aggregate per zone (the default zone too), each holding that zone's compute
    host. Nova's scheduler maps a requested zone to these aggregates in Placement, which the
    API updates synchronously; without an explicit `nova` aggregate a server asking for the
    default zone could land on the az2 host before the scheduler's cache learns of az2."""
    have = {a['name']: a for a in c.get(NOVA_URL + '/os-aggregates')['aggregates']}
    for zone in s.zones:
        agg = have.get(zone) or c.post(NOVA_URL + '/os-aggregates', {'aggregate': {
            'name': zone, 'availability_zone': zone}})['aggregate']
        if COMPUTE_HOSTS[zone] not in (agg.get('hosts') or []):
            c.post(f'{NOVA_URL}/os-aggregates/{agg["id"]}/action',
                   {'add_host': {'host': COMPUTE_HOSTS[zone]}})


def _boot(name, zone, flavor):
    m = member()
    vol = m.post(CINDER_URL + '/volumes', {'volume': {
        'size': 1, 'name': f'{name}-root', 'volume_type': VOLUME_TYPE, 'availability_zone': zone,
        'description': f'root disk of test node {name}'}})['volume']
    m.wait_status(f'{CINDER_URL}/volumes/{vol["id"]}', 'volume', 'available')
    m.post(f'{CINDER_URL}/volumes/{vol["id"]}/action', {'os-set_bootable': {'bootable': True}})
    srv = m.post(NOVA_URL + '/servers', {'server': {
        'name': name, 'flavorRef': flavor, 'networks': 'none', 'availability_zone': zone,
        'block_device_mapping_v2': [{'boot_index': 0, 'uuid': vol['id'], 'source_type': 'volume',
                                     'destination_type': 'volume',
                                     'delete_on_termination': True}]}})['server']
    got = m.wait_status(f'{NOVA_URL}/servers/{srv["id"]}', 'server', 'ACTIVE', bad=('ERROR',),
                        timeout=120)
    assert got['OS-EXT-AZ:availability_zone'] == zone, got
    return {'name': name, 'id': srv['id'], 'availability_zone': got['OS-EXT-AZ:availability_zone'],
            'root_volume': vol['id']}


def cloud(s):
    """Seed everything after the services are ready; returns the test nodes."""
    c = admin()
    t = time.monotonic()
    flavor = _flavor(c)
    _volume_type(c, VOLUME_TYPE, {}, 'plain volumes (any availability zone)')
    _volume_type(c, MULTIATTACH_TYPE, {'multiattach': '<is> True'},
                 'volumes that may be attached to several servers at once')
    _volume_type(c, ALT_VOLUME_TYPE, {}, 'plain volumes like standard (an in-place retype target)')
    _volume_type(c, GROUP_VOLUME_TYPE, {'volume_backend_name': next(iter(BACKENDS))},
                 'volumes of one backend (a Cinder group holds volumes of its backend only)')
    _group_type(c, GROUP_TYPE, {'consistent_group_snapshot_enabled': '<is> True'},
                'groups whose snapshots are one point in time (the fake driver freezes them)')
    _group_type(c, INCONSISTENT_GROUP_TYPE, {},
                'groups whose members Cinder snapshots one after another (not a CSI group)')
    pid = project_id(MEMBER['project'])
    c.put(f'{CINDER_URL}/os-quota-sets/{pid}',
          {'quota_set': {k: -1 for k in UNLIMITED_CINDER}})
    c.put(f'{NOVA_URL}/os-quota-sets/{pid}', {'quota_set': {k: -1 for k in UNLIMITED_NOVA}})
    _zones(c, s)
    names = [(s.node_name(i), s.node_zone(i)) for i in range(s.nodes)]
    # Old servers of every possible node name, so a smaller OSTACK_NODES leaves none behind.
    old = _delete_old_servers(c, {s.node_name(i) for i in range(16)})
    with ThreadPoolExecutor(len(names)) as ex:
        nodes = list(ex.map(lambda nz: _boot(nz[0], nz[1], flavor), names))
    for n in nodes:
        n.update(project_id=pid, by_id_dir=str(s.by_id_dir(n['name'])),
                 metadata_url=s.metadata_url(n['name']))
    (s.state / 'nodes.json').write_text(json.dumps(nodes, indent=1))
    print(f'ostack up: seeded types, quotas, flavor; replaced {old} old server(s); booted '
          f'{len(nodes)} node server(s) in {time.monotonic() - t:.1f} s', flush=True)
    return nodes
