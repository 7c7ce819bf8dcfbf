"""What `up` hands to the tests: cloud.conf (password and application-credential variants),
clouds.yaml and env.sh (OS_* variables plus the test nodes), all in the state dir."""

import shlex
from pathlib import Path

from .settings import (ADMIN, ALT_VOLUME_TYPE, BACKENDS, GROUP_TYPE, GROUP_VOLUME_TYPE, HERE,
                       INCONSISTENT_GROUP_TYPE, KEYSTONE_URL, MEMBER, MULTIATTACH_TYPE, REGION,
                       VOLUME_TYPE)

CLOUD_CONF_TAIL = f"""
[BlockStorage]
# The test cloud's Nova attaches through the test hypervisor; no limit needed beyond default.
# Its consistent group type (the member user cannot read group type specs: the operator vouches).
group-type = {GROUP_TYPE}
[Metadata]
# Node identity comes from the test hypervisor's metadata service (--metadata-url per node).
search-order = metadataService
"""


def _write(path, text, mode=0o600):
    path.write_text(text)
    path.chmod(mode)


def cloud_conf(s, app_cred):
    common = f'auth-url = {KEYSTONE_URL}\nregion = {REGION}\n'
    _write(s.state / 'cloud.conf',
           '# cinder-csi test cloud: the member user with a password\n[Global]\n' + common +
           f'username = {MEMBER["user"]}\npassword = {MEMBER["password"]}\n'
           f'user-domain-id = default\ntenant-name = {MEMBER["project"]}\n'
           'tenant-domain-id = default\n' + CLOUD_CONF_TAIL)
    _write(s.state / 'cloud-appcred.conf',
           '# cinder-csi test cloud: the member\'s application credential\n[Global]\n' + common +
           f'application-credential-id = {app_cred["id"]}\n'
           f'application-credential-secret = {app_cred["secret"]}\n' + CLOUD_CONF_TAIL)


def clouds_yaml(s, app_cred):
    def password(name, who):
        return (f'  {name}:\n    region_name: {REGION}\n    identity_api_version: 3\n'
                f'    auth:\n      auth_url: {KEYSTONE_URL}\n      username: {who["user"]}\n'
                f'      password: {who["password"]}\n      project_name: {who["project"]}\n'
                f'      user_domain_id: default\n      project_domain_id: default\n')
    text = ('# cinder-csi test cloud (tests/harness/openstack/ostack)\nclouds:\n' +
            password('csi-test', MEMBER) + password('csi-test-admin', ADMIN) +
            f'  csi-test-appcred:\n    region_name: {REGION}\n    identity_api_version: 3\n'
            f'    auth_type: v3applicationcredential\n    auth:\n      auth_url: {KEYSTONE_URL}\n'
            f'      application_credential_id: {app_cred["id"]}\n'
            f'      application_credential_secret: {app_cred["secret"]}\n')
    _write(s.state / 'clouds.yaml', text)


def env_file(s, app_cred, nodes):
    v = {
        'OSTACK_STATE': s.state, 'OSTACK_BIN': HERE / 'ostack', 'OSTACK_VENV': s.venv,
        'OS_AUTH_URL': KEYSTONE_URL, 'OS_IDENTITY_API_VERSION': '3', 'OS_REGION_NAME': REGION,
        'OS_INTERFACE': 'public', 'OS_USERNAME': MEMBER['user'],
        'OS_PASSWORD': MEMBER['password'], 'OS_PROJECT_NAME': MEMBER['project'],
        'OS_USER_DOMAIN_ID': 'default', 'OS_PROJECT_DOMAIN_ID': 'default',
        'OS_CLIENT_CONFIG_FILE': s.state / 'clouds.yaml',
        'OSTACK_ADMIN_USERNAME': ADMIN['user'], 'OSTACK_ADMIN_PASSWORD': ADMIN['password'],
        'OSTACK_ADMIN_PROJECT_NAME': ADMIN['project'],
        'OSTACK_PROJECT_ID': nodes[0]['project_id'],
        'OSTACK_APP_CRED_ID': app_cred['id'], 'OSTACK_APP_CRED_SECRET': app_cred['secret'],
        'OSTACK_CLOUD_CONF': s.state / 'cloud.conf',
        'OSTACK_CLOUD_CONF_APPCRED': s.state / 'cloud-appcred.conf',
        'OSTACK_CLOUDS_YAML': s.state / 'clouds.yaml',
        'OSTACK_VOLUME_TYPE': VOLUME_TYPE, 'OSTACK_MULTIATTACH_TYPE': MULTIATTACH_TYPE,
        'OSTACK_ALT_VOLUME_TYPE': ALT_VOLUME_TYPE,
        'OSTACK_GROUP_TYPE': GROUP_TYPE, 'OSTACK_INCONSISTENT_GROUP_TYPE': INCONSISTENT_GROUP_TYPE,
        'OSTACK_GROUP_VOLUME_TYPE': GROUP_VOLUME_TYPE,
        'OSTACK_AVAILABILITY_ZONES': ' '.join(dict.fromkeys(BACKENDS.values())),
        'OSTACK_VOLUME_DIR': s.volumes,
        'OSTACK_NODE_COUNT': len(nodes), 'OSTACK_NODES': ' '.join(n['name'] for n in nodes),
    }
    for i, n in enumerate(nodes, 1):
        v.update({f'OSTACK_NODE_{i}_NAME': n['name'], f'OSTACK_NODE_{i}_ID': n['id'],
                  f'OSTACK_NODE_{i}_AZ': n['availability_zone'],
                  f'OSTACK_NODE_{i}_BY_ID_DIR': n['by_id_dir'],
                  f'OSTACK_NODE_{i}_METADATA_URL': n['metadata_url']})
    lines = ['# The real-OpenStack test cloud (tests/harness/openstack/ostack up). Source it, or set',
             '# CINDER_CSI_OSTACK_ENV to this file for the openstack_* cargo tests.']
    lines += [f'export {k}={shlex.quote(str(val))}' for k, val in v.items()]
    _write(s.env_file, '\n'.join(lines) + '\n')


def write_all(s, app_cred, nodes):
    cloud_conf(s, app_cred)
    clouds_yaml(s, app_cred)
    env_file(s, app_cred, nodes)
    return Path(s.env_file)
