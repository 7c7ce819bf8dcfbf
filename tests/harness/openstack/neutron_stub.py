#!/usr/bin/env python3
"""Minimal Neutron API: enough for Nova servers booted with `networks: "none"`.

Nova still asks Neutron for ports and security groups (`GET /servers/{id}` fails with
EndpointNotFound without a network endpoint). Every collection GET returns an empty list,
an item GET is 404, every write is 404. No auth. usage: neutron_stub.py PORT"""

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 9696
BASE = f'http://127.0.0.1:{PORT}'
NOT_FOUND = {'NeutronError': {'type': 'NotFound', 'message': 'network stub', 'detail': ''}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server naming)
        path = self.path.split('?', 1)[0].rstrip('/')
        if path == '':
            return self._send(200, {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                                                  'links': [{'href': BASE + '/v2.0/',
                                                             'rel': 'self'}]}]})
        if path == '/v2.0':
            return self._send(200, {'resources': []})
        m = re.match(r'^/v2\.0/([a-z_-]+?)(?:\.json)?$', path)
        if m:
            return self._send(200, {m.group(1).replace('-', '_'): []})
        return self._send(404, NOT_FOUND)

    def _not_found(self):
        n = int(self.headers.get('Content-Length') or 0)
        if n:
            self.rfile.read(n)
        self._send(404, NOT_FOUND)

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_found

    def log_message(self, fmt, *args):
        pass


if __name__ == '__main__':
    ThreadingHTTPServer(('127.0.0.1', PORT), Handler).serve_forever()
