"""Config files of every service, written into the state dir on each `up` (cheap, keeps them in
step with this code). Options and why they are needed: shared/reference/mini-openstack.md §3."""

import os
import shutil

from .settings import (BACKEND_CAPACITY_GB, BACKENDS, HERE, COMPUTE_HOST, COMPUTE_HOSTS, HOST,
                       KEYSTONE_URL, PORTS, RABBIT_PASS, RABBIT_USER, REGION, SCHEDULER_FILTERS)



def _ini(sections):
    out = []
    for name, values in sections:
        out.append(f'[{name}]')
        out.extend(f'{k} = {v}' for k, v in values.items())
        out.append('')
    return '\n'.join(out)


def _auth(user, region_key='region_name'):
    return {'auth_url': KEYSTONE_URL, 'auth_type': 'password', 'project_domain_id': 'default',
            'user_domain_id': 'default', 'project_name': 'service', 'username': user,
            'password': f'{user}pass', region_key: REGION}


def _authtoken(user):
    return dict(_auth(user), www_authenticate_uri=KEYSTONE_URL)


def transport_url():
    return f'rabbit://{RABBIT_USER}:{RABBIT_PASS}@{HOST}:{PORTS["rabbitmq"]}/'


def api_workers(default_threads):
    """(processes, threads) of cinder-api and nova-api: OSTACK_API_PROCESSES (default 1) and
    OSTACK_API_THREADS (default: each service's own), to measure clients against other shapes
    of threaded WSGI behind keep-alive (`ostack restart-apis`)."""
    return (int(os.environ.get('OSTACK_API_PROCESSES') or 1),
            int(os.environ.get('OSTACK_API_THREADS') or default_threads))


def _uwsgi(s, name, port, module, threads, extra, processes=1):
    lines = ['[uwsgi]',
             # http11-socket + keep-alive: plain http-socket resets pooled connections.
             f'http11-socket = {HOST}:{port}', 'http-keepalive = 1', f'module = {module}',
             'master = true', f'processes = {processes}', f'threads = {threads}',
             'enable-threads = true',
             'lazy-apps = true', 'die-on-term = true', 'buffer-size = 65535',
             f'procname-prefix = {name}-', *extra, '']
    (s.etc / f'{name}-uwsgi.ini').write_text('\n'.join(lines))


def keystone(s):
    d = s.etc / 'keystone'
    d.mkdir(parents=True, exist_ok=True)
    (d / 'keystone.conf').write_text(_ini([
        ('DEFAULT', {'log_file': s.log / 'keystone.log'}),
        ('database', {'connection': s.db_url('keystone')}),
        ('token', {'provider': 'fernet'}),
        ('fernet_tokens', {'key_repository': d / 'fernet-keys'}),
        ('fernet_receipts', {'key_repository': d / 'fernet-keys'}),
        ('credential', {'key_repository': d / 'credential-keys'}),
    ]))
    _uwsgi(s, 'keystone', PORTS['keystone'], 'keystone.wsgi.api:application', 4,
           [f'env = OS_KEYSTONE_CONFIG_FILES={d / "keystone.conf"}'])


def placement(s):
    d = s.etc / 'placement'
    d.mkdir(parents=True, exist_ok=True)
    (d / 'placement.conf').write_text(_ini([
        ('DEFAULT', {'log_file': s.log / 'placement-api.log'}),
        ('api', {'auth_strategy': 'keystone'}),
        ('placement_database', {'connection': s.db_url('placement')}),
        ('keystone_authtoken', _authtoken('placement')),
    ]))
    _uwsgi(s, 'placement', PORTS['placement'], 'placement.wsgi.api:application', 4,
           [f'env = OS_PLACEMENT_CONFIG_DIR={d}'])


# On cinder-volume's and cinder-backup's PYTHONPATH.
DRIVER_DIR = HERE / 'cinder_driver'


def cinder_conf(s):
    return s.etc / 'cinder' / 'cinder.conf'


def cinder(s):
    d = s.etc / 'cinder'
    d.mkdir(parents=True, exist_ok=True)
    v = s.venv / 'etc' / 'cinder'
    helper = f'{s.bin("privsep-helper")} --config-file {cinder_conf(s)}'
    sections = [
        ('DEFAULT', {
            'transport_url': transport_url(), 'auth_strategy': 'keystone', 'my_ip': HOST,
            'host': COMPUTE_HOST, 'state_path': s.data / 'cinder',
            'api_paste_config': v / 'api-paste.ini',
            'resource_query_filters_file': v / 'resource_filters.json',
            'rootwrap_config': v / 'rootwrap.conf',
            'enabled_backends': ','.join(BACKENDS), 'default_volume_type': '__DEFAULT__',
            'scheduler_default_filters': SCHEDULER_FILTERS,
            'storage_availability_zone': 'nova', 'default_availability_zone': 'nova',
            # Nothing listens there; never contacted (no image-backed volumes).
            'glance_api_servers': f'http://{HOST}:9292',
            'backup_driver': 'cinder.backup.drivers.posix.PosixBackupDriver',
            'backup_posix_path': s.data / 'cinder-backups',
            # zstd: fast on the mostly-zero sparse volumes (zlib took 47 s for 2 GiB).
            'backup_compression_algorithm': 'zstd',
            # Pools usable ~1 s after start instead of 60-70 s (pitfall 4).
            'periodic_interval': 10, 'periodic_fuzzy_delay': 0,
            'scheduler_driver_init_wait_time': 5, 'graceful_shutdown_timeout': 5,
            # cinder-api waits this long for cinder-volume's answer; the fake driver's
            # deliberately slow attaches (attach-delay, the alert tests) take up to 150 s.
            'rpc_response_timeout': 300,
        }),
        ('database', {'connection': s.db_url('cinder')}),
        ('oslo_concurrency', {'lock_path': s.data / 'locks'}),
        # No sudo here and we are root: privsep without it (pitfall 5).
        ('privsep_osbrick', {'helper_command': helper}),
        ('cinder_sys_admin', {'helper_command': helper}),
    ]
    for name, az in BACKENDS.items():
        sections.append((name, {
            'volume_driver': 'csi_fake_cinder_driver.FileBackedFakeDriver',
            'volume_backend_name': name, 'backend_availability_zone': az,
            'csi_fake_volume_dir': s.volumes,
            **({'csi_fake_capacity_gb': BACKEND_CAPACITY_GB[name]}
               if name in BACKEND_CAPACITY_GB else {}),
        }))
    sections += [('keystone_authtoken', _authtoken('cinder')), ('nova', _auth('nova'))]
    cinder_conf(s).write_text(_ini(sections))
    processes, threads = api_workers(8)
    _uwsgi(s, 'cinder-api', PORTS['cinder-api'], 'cinder.wsgi.api:application', threads,
           [f'pyargv = --config-file {cinder_conf(s)} --log-file {s.log / "cinder-api.log"}'],
           processes)


def nova_conf(s):
    return s.etc / 'nova' / 'nova.conf'


def nova(s):
    d = s.etc / 'nova'
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(s.venv / 'etc' / 'nova' / 'api-paste.ini', d / 'api-paste.ini')
    nova_conf(s).write_text(_ini([
        ('DEFAULT', {
            'transport_url': transport_url(),
            # FakeDriver picks a new node UUID per start and cannot restart (pitfall 8).
            'compute_driver': 'fake.FakeDriverWithoutFakeNodes',
            'my_ip': HOST, 'host': COMPUTE_HOST, 'state_path': s.data / 'nova',
            'instances_path': s.data / 'nova' / 'instances', 'enabled_apis': 'osapi_compute',
            'rootwrap_config': s.venv / 'etc' / 'nova' / 'rootwrap.conf',
            'graceful_shutdown_timeout': 5, 'periodic_fuzzy_delay': 0,
        }),
        ('wsgi', {'api_paste_config': d / 'api-paste.ini'}),
        ('api', {'auth_strategy': 'keystone'}),
        ('api_database', {'connection': s.db_url('nova_api')}),
        ('database', {'connection': s.db_url('nova')}),
        ('conductor', {'workers': 1}),
        ('scheduler', {'workers': 1, 'discover_hosts_in_cells_interval': 5}),
        ('oslo_concurrency', {'lock_path': s.data / 'locks'}),
        ('vnc', {'enabled': 'false'}),
        # No Glance runs, but boot notifications build an image URL (pitfall 7).
        ('glance', {'api_servers': f'http://{HOST}:9292'}),
        ('keystone_authtoken', _authtoken('nova')),
        ('service_user', dict(_auth('nova'), send_service_user_token='true')),
        ('placement', _auth('placement')),
        ('cinder', _auth('cinder', 'os_region_name')),
        ('neutron', _auth('nova')),
    ]))
    for zone in s.zones[1:]:
        # One more compute host (own name and compute_id) for the servers in `zone`.
        state = s.data / f'nova-{zone}'
        (state / 'instances').mkdir(parents=True, exist_ok=True)
        (d / f'nova-compute-{zone}.conf').write_text(_ini([('DEFAULT', {
            'host': COMPUTE_HOSTS[zone], 'state_path': state,
            'instances_path': state / 'instances'})]))
    processes, threads = api_workers(4)
    _uwsgi(s, 'nova-api', PORTS['nova-api'], 'nova.wsgi.osapi_compute:application', threads,
           [f'env = OS_NOVA_CONFIG_DIR={d}',
            f'pyargv = --config-file {nova_conf(s)} --log-file {s.log / "nova-api.log"}'],
           processes)


def rabbitmq(s):
    (s.rabbitmq / 'rabbitmq.conf').write_text(
        f'listeners.tcp.default = {HOST}:{PORTS["rabbitmq"]}\nloopback_users = none\n'
        f'default_user = {RABBIT_USER}\ndefault_pass = {RABBIT_PASS}\n')
    (s.rabbitmq / 'enabled_plugins').write_text('[].\n')


def rabbitmq_env(s):
    erl = '-kernel inet_dist_use_interface {127,0,0,1}'
    return {
        'HOME': str(s.rabbitmq), 'RABBITMQ_NODENAME': 'rabbit@localhost',
        'RABBITMQ_NODE_IP_ADDRESS': HOST, 'RABBITMQ_NODE_PORT': str(PORTS['rabbitmq']),
        'RABBITMQ_DIST_PORT': str(PORTS['rabbitmq-dist']),
        'RABBITMQ_MNESIA_BASE': str(s.rabbitmq / 'mnesia'),
        'RABBITMQ_LOG_BASE': str(s.log / 'rabbitmq'),
        'RABBITMQ_CONFIG_FILE': str(s.rabbitmq / 'rabbitmq.conf'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': str(s.rabbitmq / 'enabled_plugins'),
        'RABBITMQ_PID_FILE': str(s.run / 'rabbitmq-beam.pidfile'),
        'ERL_EPMD_ADDRESS': HOST, 'ERL_EPMD_PORT': str(PORTS['epmd']),
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS': erl, 'RABBITMQ_CTL_ERL_ARGS': erl,
    }


def write_all(s):
    rabbitmq(s)
    keystone(s)
    placement(s)
    cinder(s)
    nova(s)
