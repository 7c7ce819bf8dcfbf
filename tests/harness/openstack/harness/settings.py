"""Where everything lives and which ports it uses. One place; overridable by environment."""

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # tests/harness/openstack
HOST = '127.0.0.1'
REGION = 'RegionOne'

# Debian packages of the cloud; the Python side is pinned in constraints.txt.
APT_PACKAGES = ('rabbitmq-server', 'mariadb-server')

# TCP ports (all bound to 127.0.0.1). MariaDB listens on a Unix socket only.
PORTS = {
    'keystone': 5000,
    'cinder-api': 8776,
    'nova-api': 8774,
    'placement': 8778,
    'neutron-stub': 9696,
    'metadata': 8775,
    'rabbitmq': 5672,
    'rabbitmq-dist': 25672,
    'epmd': 4369,
}

KEYSTONE_URL = f'http://{HOST}:{PORTS["keystone"]}/v3'
CINDER_URL = f'http://{HOST}:{PORTS["cinder-api"]}/v3'
NOVA_URL = f'http://{HOST}:{PORTS["nova-api"]}/v2.1'
PLACEMENT_URL = f'http://{HOST}:{PORTS["placement"]}'
NEUTRON_URL = f'http://{HOST}:{PORTS["neutron-stub"]}'
METADATA_URL = f'http://{HOST}:{PORTS["metadata"]}'

# Fixed test credentials: the cloud binds to loopback only and lives in a 0700 directory.
ADMIN = {'user': 'admin', 'password': 'secret', 'project': 'admin'}
MEMBER = {'user': 'demo', 'password': 'demopass', 'project': 'demo'}
SERVICE_USERS = ('cinder', 'nova', 'placement')
RABBIT_USER, RABBIT_PASS = 'openstack', 'rabbitpass'
DB_USER, DB_PASS = 'openstack', 'dbpass'
DATABASES = ('keystone', 'placement', 'cinder', 'nova_api', 'nova', 'nova_cell0')
APP_CRED_NAME = 'csi-test'

# Cinder backends: name -> availability zone. All share one volume directory and all report
# multiattach, so every volume type works in every zone. az2 has two (fake-b, fake-c) for the
# scheduler hint tests (same_host/different_host, tests/cloud/openstack_pvc_hints.rs).
BACKENDS = {'fake-a': 'nova', 'fake-b': 'az2', 'fake-c': 'az2'}
# Backends that report a finite capacity (GiB; the others report 'infinite', which Cinder's
# CapacityWeigher ranks lowest): without hints every az2 volume goes to fake-b, as before
# fake-c existed, and only a hint puts one on fake-c.
BACKEND_CAPACITY_GB = {'fake-b': 100000}
# Cinder's default filters plus the two that honour scheduler hints (no-ops without hints).
SCHEDULER_FILTERS = ('AvailabilityZoneFilter,CapacityFilter,CapabilitiesFilter,'
                     'SameBackendFilter,DifferentBackendFilter')
VOLUME_TYPE = 'standard'
MULTIATTACH_TYPE = 'multiattach'
# A second plain type: retyping between it and `standard` changes nothing on the backend, so
# Cinder does it in place, also for an in-use volume (a retype to `multiattach` it refuses
# unless the volume is available): the Kubernetes volume-modify specs retype mounted volumes.
ALT_VOLUME_TYPE = 'standard-alt'
# Group types: one whose snapshots are consistent (the backends report the capability, the
# fake driver freezes the members while it copies them), named as the default in cloud.conf's
# [BlockStorage] group-type; and one without it, which the driver must refuse (Cinder would
# snapshot its members one by one).
GROUP_TYPE = 'consistent-snapshots'
INCONSISTENT_GROUP_TYPE = 'one-by-one'
# Cinder groups hold volumes of one backend: group snapshot tests use this type, pinned to the
# first backend, so their volumes are on one backend even where a zone has several.
GROUP_VOLUME_TYPE = 'grouped'
FLAVOR = 'm1.tiny'
COMPUTE_HOST = 'ostack-local'
# Nova compute hosts by availability zone (both always run): test node i runs in ZONES[i % 2],
# so the second node (and every other) is in az2, like the second Cinder backend.
ZONES = ('nova', 'az2')
COMPUTE_HOSTS = {'nova': COMPUTE_HOST, 'az2': 'ostack-az2'}


def loopback_no_proxy(env):
    """`env` with 127.0.0.1 and localhost added to NO_PROXY/no_proxy (existing entries kept):
    the cloud's services, and our own urllib calls, talk to each other on loopback and must
    never go through an HTTP(S)_PROXY the machine sets."""
    for key in ('NO_PROXY', 'no_proxy'):
        have = [h.strip() for h in env.get(key, '').split(',') if h.strip()]
        env[key] = ','.join(have + [h for h in ('127.0.0.1', 'localhost') if h not in have])
    return env


def _python():
    """Debian's python3 (python3-venv and python3-dev come from tests/ci/install-deps.sh; the
    latter builds uWSGI), whatever else is first on PATH (pyenv, say)."""
    if Path('/usr/bin/python3').exists():
        return '/usr/bin/python3'
    raise SystemExit('ostack: no /usr/bin/python3 (apt-get install python3-venv python3-dev, '
                     'or set OSTACK_PYTHON)')


@dataclass(frozen=True)
class Settings:
    state: Path
    venv: Path
    nodes: int

    @classmethod
    def from_env(cls):
        state = Path(os.environ.get('OSTACK_STATE', '/var/tmp/cinder-csi-ostack')).resolve()
        venv = Path(os.environ.get('OSTACK_VENV', state / 'venv')).resolve()
        nodes = int(os.environ.get('OSTACK_NODE_COUNT', '2'))
        if not 1 <= nodes <= 16:
            raise SystemExit(f'ostack: OSTACK_NODE_COUNT={nodes} must be between 1 and 16')
        return cls(state=state, venv=venv, nodes=nodes)

    @property
    def python(self):
        return os.environ.get('OSTACK_PYTHON') or _python()

    def bin(self, name):
        return self.venv / 'bin' / name

    # Directory layout of the state dir.
    @property
    def etc(self):
        return self.state / 'etc'

    @property
    def data(self):
        return self.state / 'data'

    @property
    def log(self):
        return self.state / 'log'

    @property
    def run(self):
        return self.state / 'run'

    @property
    def mysql(self):
        return self.state / 'mysql'

    @property
    def rabbitmq(self):
        return self.state / 'rabbitmq'

    @property
    def volumes(self):
        """Backing files of Cinder volumes and snapshots (the fake driver's store)."""
        return self.data / 'cinder' / 'fake-volumes'

    @property
    def nodes_dir(self):
        return self.state / 'nodes'

    @property
    def db_socket(self):
        return self.run / 'mysqld.sock'

    @property
    def env_file(self):
        return self.state / 'env.sh'

    def node_name(self, i):
        return f'node-{i + 1}'

    def node_zone(self, i):
        return ZONES[i % len(ZONES)]

    @property
    def zones(self):
        """Every Nova zone, each with its compute host. All of them run whatever the node
        count: a server left on a host by an earlier `up` can only be deleted by its host."""
        return list(ZONES)

    def compute_service(self, zone):
        """Daemon name of the nova-compute serving `zone`."""
        return 'nova-compute' if zone == 'nova' else f'nova-compute-{zone}'

    def by_id_dir(self, name):
        return self.nodes_dir / name / 'by-id'

    def metadata_url(self, name):
        return f'{METADATA_URL}/{name}/openstack/latest/meta_data.json'

    def db_url(self, db):
        return (f'mysql+pymysql://{DB_USER}:{DB_PASS}@localhost/{db}'
                f'?unix_socket={self.db_socket}&charset=utf8')

    def mkdirs(self):
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o700)
        for d in (self.etc, self.data / 'locks', self.data / 'cinder', self.volumes,
                  self.data / 'cinder-backups', self.data / 'nova' / 'instances', self.log,
                  self.run, self.rabbitmq / 'mnesia', self.nodes_dir, self.log / 'rabbitmq'):
            d.mkdir(parents=True, exist_ok=True)
