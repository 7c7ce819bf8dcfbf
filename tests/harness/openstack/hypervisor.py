#!/usr/bin/env python3
"""Test hypervisor: makes the Nova attachments of the test servers real on this machine.

Every POLL seconds it lists Cinder's attachments (one admin call, keep-alive) and, for each one
that belongs to a test server and has connection info (Nova's compute has initialised the
connection), sets up a loop device over the volume's file (the fake driver's `device_path`) and
a `virtio-<volume id[:20]>` link to it in that server's by-id directory, as virtio-blk + udev
would in a guest. When the attachment goes away, the link and the loop device go too. When a
volume's file grows (Cinder extend), `losetup -c` refreshes the loop device's capacity.

It also serves each server's metadata, as Nova's metadata service would, at
  http://127.0.0.1:8775/<node name>/openstack/latest/meta_data.json

Restarts: the loop devices it set up are recorded in run/hypervisor-state.json; a new instance
adopts those still bound to the same file and removes stale links and orphaned loop devices
(only loop devices backed by files in the state dir). On SIGTERM/SIGINT it removes every link
and loop device it made, then exits.

usage: hypervisor.py STATE_DIR   (started by `ostack up`)
"""

import json
import logging
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import loops  # noqa: E402
from harness.rest import admin  # noqa: E402
from harness.settings import CINDER_URL, PORTS  # noqa: E402

POLL = 0.3
LOG = logging.getLogger('hypervisor')


def serial_link(by_id_dir, volume_id):
    return Path(by_id_dir) / f'virtio-{volume_id[:20]}'


class Hypervisor:
    def __init__(self, state_dir):
        self.state_dir = Path(state_dir)
        self.nodes = {n['id']: n for n in json.loads((self.state_dir / 'nodes.json').read_text())}
        self.record = self.state_dir / 'run' / 'hypervisor-state.json'
        self.ready = self.state_dir / 'run' / 'hypervisor.ready'
        self.volumes_root = self.state_dir  # ownership test: backing file under the state dir
        # (node id, volume id) -> {'dev': /dev/loopN, 'file': path, 'link': path}
        self.attached = {}
        self.client = admin()
        self.stop = threading.Event()

    # -- bookkeeping ---------------------------------------------------------------------
    def _save(self):
        data = {f'{k[0]} {k[1]}': v for k, v in self.attached.items()}
        tmp = self.record.with_suffix('.tmp')
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.record)

    def adopt(self):
        """After a restart: keep what is still consistent, clean up what is not."""
        try:
            old = json.loads(self.record.read_text())
        except (OSError, ValueError):
            old = {}
        for key, rec in old.items():
            node, vol = key.split(' ', 1)
            if node in self.nodes and loops.backing_file(rec['dev']) == rec['file']:
                self.attached[(node, vol)] = rec
                LOG.info('adopted %s -> %s for %s', rec['link'], rec['dev'], vol)
        keep_links = {r['link'] for r in self.attached.values()}
        keep_devs = {r['dev'] for r in self.attached.values()}
        for node in self.nodes.values():
            d = Path(node['by_id_dir'])
            d.mkdir(parents=True, exist_ok=True)
            for link in d.iterdir():
                if str(link) not in keep_links:
                    link.unlink()
                    LOG.info('removed stale link %s', link)
        for dev, f in loops.owned(self.volumes_root).items():
            if dev not in keep_devs and loops.detach(dev, f):
                LOG.info('detached orphaned %s (%s)', dev, f)
        self._save()

    # -- attach / detach -----------------------------------------------------------------
    def _attach(self, node, vol, path):
        t = time.monotonic()
        dev = loops.attach(path)
        link = serial_link(self.nodes[node]['by_id_dir'], vol)
        tmp = link.with_name(link.name + '.tmp')
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(dev)
        os.replace(tmp, link)
        self.attached[(node, vol)] = {'dev': dev, 'file': path, 'link': str(link)}
        self._save()
        LOG.info('attach %s to %s: %s -> %s (%.0f ms)', vol, self.nodes[node]['name'], link, dev,
                 (time.monotonic() - t) * 1000)

    def _detach(self, key):
        rec = self.attached.pop(key)
        Path(rec['link']).unlink(missing_ok=True)
        ok = loops.detach(rec['dev'], rec['file'])
        self._save()
        LOG.info('detach %s from %s: removed %s, %s %s', key[1], self.nodes[key[0]]['name'],
                 rec['link'], 'detached' if ok else 'already gone:', rec['dev'])

    def reconcile(self):
        atts = self.client.get(CINDER_URL + '/attachments/detail?all_tenants=1')['attachments']
        want = {}
        for a in atts:
            info = a.get('connection_info')
            info = info if isinstance(info, dict) else {}
            # Cinder stores the connection's `data` flattened beside driver_volume_type.
            path = info.get('device_path') or (info.get('data') or {}).get('device_path')
            if a['instance'] in self.nodes and path and a['status'] in ('attaching', 'attached'):
                want[(a['instance'], a['volume_id'])] = path
        for key in [k for k in self.attached if k not in want]:
            self._detach(key)
        for key, path in want.items():
            rec = self.attached.get(key)
            if rec and loops.backing_file(rec['dev']) != rec['file']:
                LOG.warning('%s lost its backing file; re-attaching', rec['dev'])
                self._detach(key)
                rec = None
            if rec is None:
                try:
                    self._attach(key[0], key[1], path)
                except OSError as e:
                    LOG.error('attach %s failed (retrying): %s', key[1], e)
            elif loops.refresh_capacity(rec['dev'], rec['file']):
                LOG.info('capacity of %s refreshed: %d bytes', rec['dev'],
                         loops.size_bytes(rec['dev']))

    def run(self):
        self.ready.unlink(missing_ok=True)
        self.adopt()
        failing = False
        while not self.stop.is_set():
            try:
                self.reconcile()
                if not self.ready.exists():  # `up` waits for the first full pass
                    self.ready.touch()
                if failing:
                    LOG.info('Cinder reachable again')
                failing = False
            except Exception as e:  # keep following; the cloud may be restarting
                if not failing:
                    LOG.warning('poll failed (will keep trying): %s', e)
                failing = True
            self.stop.wait(POLL)

    def cleanup(self):
        self.ready.unlink(missing_ok=True)
        for key in list(self.attached):
            self._detach(key)
        self.record.unlink(missing_ok=True)


def metadata_handler(nodes_by_name):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'

        def _send(self, code, body, ctype='application/json'):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            parts = [p for p in self.path.split('?', 1)[0].split('/') if p]
            if not parts:
                return self._send(200, '\n'.join(sorted(nodes_by_name)) + '\n', 'text/plain')
            node = nodes_by_name.get(parts[0])
            rest = parts[1:]
            if node is None:
                return self._send(404, {'error': f'no test node {parts[0]}'})
            if rest == ['openstack']:
                return self._send(200, 'latest\n', 'text/plain')
            if rest == ['openstack', 'latest']:
                return self._send(200, 'meta_data.json\n', 'text/plain')
            if rest == ['openstack', 'latest', 'meta_data.json']:
                return self._send(200, {
                    'uuid': node['id'], 'name': node['name'], 'hostname': node['name'],
                    'availability_zone': node['availability_zone'],
                    'project_id': node['project_id'], 'launch_index': 0, 'devices': [],
                    'meta': {}})
            return self._send(404, {'error': f'not found: {self.path}'})

        def log_message(self, fmt, *args):
            pass

    return Handler


def main():
    state = Path(sys.argv[1])
    logging.basicConfig(filename=state / 'log' / 'hypervisor.log', level=logging.INFO,
                        format='%(asctime)s %(levelname)s %(message)s')
    hv = Hypervisor(state)
    by_name = {n['name']: n for n in hv.nodes.values()}
    server = ThreadingHTTPServer(('127.0.0.1', PORTS['metadata']), metadata_handler(by_name))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: hv.stop.set())
    LOG.info('following %d test server(s): %s', len(by_name),
             ', '.join(f'{n} {v["id"]}' for n, v in by_name.items()))
    try:
        hv.run()
    finally:
        server.shutdown()
        hv.cleanup()
        LOG.info('stopped; every link and loop device removed')


if __name__ == '__main__':
    main()
