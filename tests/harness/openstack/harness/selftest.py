"""`ostack selftest`: checks the running cloud the way the driver will use it.

- each node's metadata URL serves its server's uuid and availability zone;
- a Nova attach makes a loop device over the volume's file and a virtio-<id[:20]> link in that
  node's by-id dir; a Nova detach removes both;
- bytes written through the loop device are in the volume: a snapshot, a volume created from
  it, a clone, and a backup restore carry the right data (the snapshot does not see writes made
  after it);
- extending an in-use volume grows the loop device; a multiattach volume shows up on two nodes.
Everything it creates is deleted, also on failure."""

import json
import os
import time
import urllib.request
from pathlib import Path

from .rest import admin, member
from .settings import CINDER_URL, MULTIATTACH_TYPE, NOVA_URL, VOLUME_TYPE

GiB = 1024 ** 3
OFFSET = 5 * 1024 * 1024


class Check:
    def __init__(self, s):
        self.s = s
        self.nodes = json.loads((s.state / 'nodes.json').read_text())
        self.m = member()
        self.created = []  # (kind, id), deleted in reverse order

    def ok(self, what, t0=None):
        took = f' ({(time.monotonic() - t0) * 1000:.0f} ms)' if t0 else ''
        print(f'  ok  {what}{took}', flush=True)

    def volume(self, name, size=1, **extra):
        body = dict({'volume_type': VOLUME_TYPE}, size=size, name=f'selftest-{name}', **extra)
        v = self.m.post(CINDER_URL + '/volumes', {'volume': body})['volume']
        self.created.append(('volumes', v['id']))
        return self.m.wait_status(f'{CINDER_URL}/volumes/{v["id"]}', 'volume', 'available',
                                  timeout=120)

    def link(self, node, vol):
        return Path(node['by_id_dir']) / f'virtio-{vol[:20]}'

    def attach(self, node, vol):
        t0 = time.monotonic()
        self.m.post(f'{NOVA_URL}/servers/{node["id"]}/os-volume_attachments',
                    {'volumeAttachment': {'volumeId': vol}})
        self.m.wait_status(f'{CINDER_URL}/volumes/{vol}', 'volume', 'in-use')
        in_use = time.monotonic()
        dev = self.wait(lambda: self.link(node, vol).exists(), f'link for {vol}')
        dev = os.path.realpath(self.link(node, vol))
        backing = Path(f'/sys/block/{os.path.basename(dev)}/loop/backing_file').read_text()
        assert backing.strip() == str(self.s.volumes / f'volume-{vol}'), backing
        self.ok(f'attach {vol[:8]} to {node["name"]}: in-use after {(in_use - t0) * 1000:.0f} ms'
                f', {self.link(node, vol).name} -> {dev}', t0)
        return dev

    def detach(self, node, vol, last=True):
        t0 = time.monotonic()
        dev = os.path.realpath(self.link(node, vol))
        self.m.delete(f'{NOVA_URL}/servers/{node["id"]}/os-volume_attachments/{vol}')
        if last:
            self.m.wait_status(f'{CINDER_URL}/volumes/{vol}', 'volume', 'available')
        else:
            url = f'{CINDER_URL}/volumes/{vol}'
            self.wait(lambda: node['id'] not in [a['server_id'] for a in self.m.get(url)[
                'volume']['attachments']], f'{vol} to be detached from {node["name"]}', 60)
        self.wait(lambda: not self.link(node, vol).exists(), f'link of {vol} to go')
        gone = Path(f'/sys/block/{os.path.basename(dev)}/loop/backing_file')
        self.wait(lambda: not gone.exists() or f'volume-{vol}' not in gone.read_text(),
                  f'{dev} to be detached')
        self.ok(f'detach {vol[:8]} from {node["name"]}: link and {dev} gone', t0)

    @staticmethod
    def wait(fn, what, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not fn():
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out waiting for {what}')
            time.sleep(0.05)
        return True

    @staticmethod
    def write(dev, data):
        fd = os.open(dev, os.O_WRONLY)
        try:
            os.pwrite(fd, data, OFFSET)
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_file(self, kind, oid, n):
        with open(self.s.volumes / f'{kind}-{oid}', 'rb') as f:
            f.seek(OFFSET)
            return f.read(n)

    def cleanup(self):
        c = admin()
        for node in self.nodes:
            for a in c.get(f'{NOVA_URL}/servers/{node["id"]}/os-volume_attachments')[
                    'volumeAttachments']:
                if any(a['volumeId'] == oid for _, oid in self.created):
                    c.delete(f'{NOVA_URL}/servers/{node["id"]}/os-volume_attachments/'
                             f'{a["volumeId"]}')
        order = {'backups': 0, 'snapshots': 1, 'volumes': 2}
        for kind, oid in sorted(self.created, key=lambda x: order[x[0]]):
            url = f'{CINDER_URL}/{kind}/{oid}'
            key = kind[:-1]
            try:
                if kind == 'volumes':
                    c.wait_status(url, key, 'available', bad=(), timeout=30)
                c.delete(url)
                c.wait_status(url, key, 'deleted', bad=(), timeout=60)
            except Exception as e:  # report, keep cleaning
                print(f'  cleanup of {kind} {oid}: {e}')


def _metadata(ch):
    for n in ch.nodes:
        with urllib.request.urlopen(n['metadata_url'], timeout=5) as r:
            md = json.load(r)
        assert md['uuid'] == n['id'] and md['availability_zone'] == n['availability_zone'], md
        ch.ok(f'metadata of {n["name"]}: uuid {md["uuid"]}, az {md["availability_zone"]}')


def _data_path(ch):
    n1 = ch.nodes[0]
    a = ch.volume('a')
    dev = ch.attach(n1, a['id'])
    p1, p2 = os.urandom(4096), os.urandom(4096)
    ch.write(dev, p1)
    assert ch.read_file('volume', a['id'], 4096) == p1
    ch.ok('bytes written through the loop device are in the volume file')
    t0 = time.monotonic()
    snap = ch.m.post(CINDER_URL + '/snapshots', {'snapshot': {
        'volume_id': a['id'], 'name': 'selftest-snap', 'force': True}})['snapshot']
    ch.created.append(('snapshots', snap['id']))
    ch.m.wait_status(f'{CINDER_URL}/snapshots/{snap["id"]}', 'snapshot', 'available')
    ch.write(dev, p2)  # after the snapshot: must not show in it
    assert ch.read_file('snapshot', snap['id'], 4096) == p1
    ch.ok('snapshot of the in-use volume holds the data of its time', t0)
    t0 = time.monotonic()
    b = ch.volume('from-snap', size=2, snapshot_id=snap['id'])
    assert ch.read_file('volume', b['id'], 4096) == p1
    assert os.path.getsize(ch.s.volumes / f'volume-{b["id"]}') == 2 * GiB
    ch.ok('volume from snapshot (grown to 2 GiB) has the snapshot data', t0)
    t0 = time.monotonic()
    c = ch.volume('clone', source_volid=a['id'])
    assert ch.read_file('volume', c['id'], 4096) == p2
    ch.ok('clone has the source data', t0)
    t0 = time.monotonic()
    ch.m.post(f'{CINDER_URL}/volumes/{a["id"]}/action', {'os-extend': {'new_size': 2}})
    ch.wait(lambda: ch.m.get(f'{CINDER_URL}/volumes/{a["id"]}')['volume']['size'] == 2,
            'Cinder size 2', 30)
    sysfs = Path(f'/sys/block/{os.path.basename(dev)}/size')
    ch.wait(lambda: int(sysfs.read_text()) * 512 == 2 * GiB, f'{dev} to grow to 2 GiB')
    ch.ok(f'extend of the in-use volume: {dev} is 2 GiB', t0)
    ch.detach(n1, a['id'])
    return c


def _backup(ch, b, expect):
    """Backup of a 1 GiB volume: the posix driver reads every byte (~10 s here)."""
    t0 = time.monotonic()
    bk = ch.m.post(CINDER_URL + '/backups', {'backup': {
        'volume_id': b['id'], 'name': 'selftest-backup'}})['backup']
    ch.created.append(('backups', bk['id']))
    ch.m.wait_status(f'{CINDER_URL}/backups/{bk["id"]}', 'backup', 'available', timeout=180)
    d = ch.volume('restored', size=b['size'], backup_id=bk['id'])
    assert ch.read_file('volume', d['id'], 4096) == expect
    ch.ok('backup + restore into a new volume carries the data', t0)


def _multiattach(ch):
    if len(ch.nodes) < 2:
        return
    mv = ch.volume('multi', volume_type=MULTIATTACH_TYPE)
    assert mv['multiattach'], mv
    for n in ch.nodes[:2]:
        ch.attach(n, mv['id'])
    ch.detach(ch.nodes[0], mv['id'], last=False)
    assert ch.link(ch.nodes[1], mv['id']).exists(), 'detach from one node removed the other link'
    ch.detach(ch.nodes[1], mv['id'])
    ch.ok('multiattach volume attached to two nodes at once')


def _zones(ch):
    t0 = time.monotonic()
    z = ch.volume('az2', availability_zone='az2')
    assert z['availability_zone'] == 'az2', z
    ch.ok('volume created in the second availability zone az2', t0)


def run(s):
    ch = Check(s)
    t0 = time.monotonic()
    try:
        _metadata(ch)
        b = _data_path(ch)
        _backup(ch, b, ch.read_file('volume', b['id'], 4096))
        _multiattach(ch)
        _zones(ch)
    finally:
        ch.cleanup()
    left = [f'{k[:-1]}-{i}' for k, i in ch.created
            if k != 'backups' and (s.volumes / f'{k[:-1]}-{i}').exists()]
    assert not left, f'files of deleted volumes/snapshots left in {s.volumes}: {left}'
    print(f'ostack selftest: passed in {time.monotonic() - t0:.1f} s')
