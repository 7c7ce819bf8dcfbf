"""A small keep-alive REST client for Keystone/Cinder/Nova (standard library only)."""

import http.client
import json
import sys
import threading
import time
from urllib.parse import urlsplit

from .settings import (ADMIN, CINDER_URL, KEYSTONE_URL, MEMBER, NOVA_URL, PLACEMENT_URL)

# Microversions the harness speaks (Cinder max 3.71, Nova max 2.104 on this cloud).
HEADERS = {'OpenStack-API-Version': 'volume 3.71, compute 2.96',
           'X-OpenStack-Nova-API-Version': '2.96'}
URLS = {'identity': KEYSTONE_URL, 'block-storage': CINDER_URL, 'compute': NOVA_URL,
        'placement': PLACEMENT_URL}


class ApiError(Exception):
    def __init__(self, method, url, status, body):
        super().__init__(f'{method} {url} -> {status}: {str(body)[:500]}')
        self.status = status
        self.body = body


class Client:
    """One keep-alive connection per host:port, thread-local; re-authenticates on 401."""

    def __init__(self, creds=None, timeout=30.0):
        self.creds = creds or {'password': ADMIN}
        self.timeout = timeout
        self.token = None
        self.token_body = None
        self._local = threading.local()

    def _conn(self, netloc):
        conns = self._local.__dict__.setdefault('conns', {})
        if netloc not in conns:
            host, port = netloc.rsplit(':', 1)
            conns[netloc] = http.client.HTTPConnection(host, int(port), timeout=self.timeout)
        return conns[netloc]

    def _raw(self, method, url, body=None, headers=None):
        u = urlsplit(url)
        path = u.path + (f'?{u.query}' if u.query else '')
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {'Accept': 'application/json', **HEADERS, **(headers or {})}
        if data is not None:
            hdrs['Content-Type'] = 'application/json'
        for attempt in (1, 2):
            conn = self._conn(u.netloc)
            try:
                conn.request(method, path, body=data, headers=hdrs)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, TimeoutError):
                conn.close()  # a pooled connection the server closed: reconnect once
                if attempt == 2:
                    raise
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors='replace')
        return resp.status, dict(resp.getheaders()), parsed

    def authenticate(self):
        c = self.creds
        if 'app_cred' in c:
            ident = {'methods': ['application_credential'],
                     'application_credential': c['app_cred']}
            body = {'auth': {'identity': ident}}
        else:
            p = c['password']
            ident = {'methods': ['password'], 'password': {'user': {
                'name': p['user'], 'domain': {'id': 'default'}, 'password': p['password']}}}
            body = {'auth': {'identity': ident, 'scope': {'project': {
                'name': p['project'], 'domain': {'id': 'default'}}}}}
        status, hdrs, parsed = self._raw('POST', KEYSTONE_URL + '/auth/tokens', body)
        if status != 201:
            raise ApiError('POST', KEYSTONE_URL + '/auth/tokens', status, parsed)
        self.token = {k.lower(): v for k, v in hdrs.items()}['x-subject-token']
        self.token_body = parsed['token']
        return self

    def call(self, method, url, body=None, ok=(200, 201, 202, 204), headers=None):
        if self.token is None:
            self.authenticate()
        for attempt in (1, 2):
            status, _, parsed = self._raw(method, url, body,
                                          dict(headers or {}, **{'X-Auth-Token': self.token}))
            if status == 401 and attempt == 1:
                self.authenticate()
                continue
            break
        if ok and status not in ok:
            raise ApiError(method, url, status, parsed)
        return parsed

    def get(self, url, **kw):
        return self.call('GET', url, **kw)

    def post(self, url, body=None, **kw):
        return self.call('POST', url, body, **kw)

    def put(self, url, body=None, **kw):
        return self.call('PUT', url, body, **kw)

    def delete(self, url, **kw):
        return self.call('DELETE', url, ok=(200, 202, 204, 404), **kw)

    def wait_status(self, url, key, want, bad=('error',), timeout=60.0):
        """Poll a resource until its status is `want` ('deleted' waits for 404)."""
        deadline = time.monotonic() + timeout
        while True:
            status, _, parsed = self._raw('GET', url, None, {'X-Auth-Token': self.token})
            if status == 404 and want == 'deleted':
                return None
            if status == 200:
                st = parsed[key]['status']
                if st == want:
                    return parsed[key]
                if st in bad:
                    raise ApiError('GET', url, st, parsed[key])
            if time.monotonic() > deadline:
                raise TimeoutError(f'{url}: still {status} {parsed and parsed.get(key, {}).get("status")}, '
                                   f'wanted {want} within {timeout:.0f} s')
            time.sleep(0.2)


def admin():
    return Client({'password': ADMIN})


def member():
    return Client({'password': MEMBER})


def cli(s, args):
    """`ostack api`: one call, the JSON body on stdout. Exit 0 on 2xx, 4 on 404, 1 otherwise
    (the status is printed on stderr)."""
    c = admin() if args.admin else member()
    body = json.loads(args.body) if args.body else None
    url = URLS[args.service] + ('' if args.path.startswith('/') else '/') + args.path
    try:
        c.authenticate()
        status, _, out = c._raw(args.method.upper(), url, body, {'X-Auth-Token': c.token})
    except (OSError, ApiError) as e:
        print(f'ostack api: {e}', file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write('\n')
    if 200 <= status < 300:
        return 0
    print(f'ostack api: {args.method.upper()} {url} -> {status}', file=sys.stderr)
    return 4 if status == 404 else 1
