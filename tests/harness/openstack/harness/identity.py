"""Keystone contents: projects, users and roles, the service catalog, the member's
application credential. Idempotent."""

import json
import secrets

from .rest import ApiError, Client, admin, member
from .settings import (APP_CRED_NAME, CINDER_URL, KEYSTONE_URL, MEMBER, NEUTRON_URL, NOVA_URL,
                       PLACEMENT_URL, REGION, SERVICE_USERS)

CATALOG = (('cinder', 'block-storage', CINDER_URL), ('nova', 'compute', NOVA_URL),
           ('placement', 'placement', PLACEMENT_URL), ('neutron', 'network', NEUTRON_URL))


def _get_or_create(c, coll, key, body, **query):
    q = '&'.join(f'{k}={v}' for k, v in query.items())
    got = c.get(f'{KEYSTONE_URL}/{coll}?{q}')[coll]
    if got:
        return got[0]['id']
    return c.post(f'{KEYSTONE_URL}/{coll}', {key: body})[key]['id']


def seed():
    c = admin()
    roles = {n: _get_or_create(c, 'roles', 'role', {'name': n}, name=n)
             for n in ('admin', 'member', 'service', 'reader')}
    projects = {n: _get_or_create(c, 'projects', 'project', {'name': n, 'domain_id': 'default'},
                                  name=n) for n in ('service', MEMBER['project'])}

    def user(name, password, project, role_names):
        uid = _get_or_create(c, 'users', 'user', {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': projects[project]}, name=name)
        for r in role_names:
            c.put(f'{KEYSTONE_URL}/projects/{projects[project]}/users/{uid}/roles/{roles[r]}')

    for svc in SERVICE_USERS:
        user(svc, f'{svc}pass', 'service', ['admin', 'service'])
    user(MEMBER['user'], MEMBER['password'], MEMBER['project'], ['member', 'reader'])
    for name, stype, url in CATALOG:
        sid = _get_or_create(c, 'services', 'service', {'name': name, 'type': stype}, type=stype)
        for iface in ('public', 'internal', 'admin'):
            have = c.get(f'{KEYSTONE_URL}/endpoints?service_id={sid}&interface={iface}')
            if not have['endpoints']:
                c.post(f'{KEYSTONE_URL}/endpoints', {'endpoint': {
                    'service_id': sid, 'interface': iface, 'url': url, 'region_id': REGION}})


def project_id(name):
    return admin().get(f'{KEYSTONE_URL}/projects?name={name}')['projects'][0]['id']


def app_credential(s):
    """The member's application credential; reused while it still authenticates."""
    path = s.state / 'app-credential.json'
    if path.exists():
        cred = json.loads(path.read_text())
        try:
            Client({'app_cred': {'id': cred['id'], 'secret': cred['secret']}}).authenticate()
            return cred
        except (ApiError, KeyError):
            pass
    m = member().authenticate()
    uid = m.token_body['user']['id']
    base = f'{KEYSTONE_URL}/users/{uid}/application_credentials'
    for old in m.get(f'{base}?name={APP_CRED_NAME}')['application_credentials']:
        m.delete(f'{base}/{old["id"]}')
    secret = secrets.token_urlsafe(24)
    made = m.post(base, {'application_credential': {
        'name': APP_CRED_NAME, 'secret': secret,
        'description': 'cinder-csi tests (tests/harness/openstack)'}})['application_credential']
    cred = {'id': made['id'], 'name': APP_CRED_NAME, 'secret': secret,
            'project_id': made['project_id']}
    path.write_text(json.dumps(cred))
    path.chmod(0o600)
    return cred
