"""One-time initialisation of a fresh state dir: MariaDB data dir and databases, every
service's schema, Keystone's keys, bootstrap admin and catalog."""

import subprocess
import threading

from . import render
from .procs import ServiceError
from .settings import (DATABASES, DB_PASS, DB_USER, KEYSTONE_URL, REGION)


def mariadb_datadir(s):
    subprocess.run(['mariadb-install-db', '--no-defaults', f'--datadir={s.mysql}', '--user=root',
                    '--auth-root-authentication-method=normal', '--skip-test-db'],
                   check=True, stdout=open(s.log / 'mariadb-install.log', 'wb'),
                   stderr=subprocess.STDOUT)


def databases(s):
    sql = ''.join(f'CREATE DATABASE IF NOT EXISTS {d} CHARACTER SET utf8;\n' for d in DATABASES)
    sql += (f"CREATE USER IF NOT EXISTS '{DB_USER}'@'localhost' IDENTIFIED BY '{DB_PASS}';\n"
            f"GRANT ALL PRIVILEGES ON *.* TO '{DB_USER}'@'localhost';\n")
    subprocess.run(['mariadb', '--no-defaults', '-S', str(s.db_socket), '-uroot'],
                   input=sql.encode(), check=True)


def _chains(s):
    k = [str(s.bin('keystone-manage')), '--config-file', str(s.etc / 'keystone' / 'keystone.conf')]
    n = [str(s.bin('nova-manage')), '--config-file', str(render.nova_conf(s))]
    ks_urls = []
    for iface in ('public', 'internal', 'admin'):
        ks_urls += [f'--bootstrap-{iface}-url', KEYSTONE_URL]
    return {
        'keystone': [k + ['db_sync'],
                     k + ['fernet_setup', '--keystone-user', 'root', '--keystone-group', 'root'],
                     k + ['credential_setup', '--keystone-user', 'root', '--keystone-group', 'root'],
                     k + ['bootstrap', '--bootstrap-password', 'secret',
                          '--bootstrap-region-id', REGION, *ks_urls]],
        'cinder': [[str(s.bin('cinder-manage')), '--config-file', str(render.cinder_conf(s)),
                    'db', 'sync']],
        'placement': [[str(s.bin('placement-manage')), '--config-file',
                       str(s.etc / 'placement' / 'placement.conf'), 'db', 'sync']],
        'nova': [n + ['api_db', 'sync'],
                 n + ['cell_v2', 'map_cell0', '--database_connection', s.db_url('nova_cell0')],
                 n + ['cell_v2', 'create_cell', '--name', 'cell1'],
                 n + ['db', 'sync']],
    }


def schemas(s):
    """The four projects' schema chains run in parallel (each chain is ordered)."""
    errors = {}

    def chain(name, cmds):
        log = s.log / f'init-{name}.log'
        with open(log, 'ab') as out:
            for cmd in cmds:
                r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   env={'PYTHONWARNINGS': 'ignore', 'PATH': '/usr/bin:/bin'})
                if r.returncode != 0:
                    errors[name] = (cmd, log)
                    return

    threads = [threading.Thread(target=chain, args=item) for item in _chains(s).items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, (cmd, log) in errors.items():
        lines = log.read_text(errors='replace').splitlines()[-25:]
        raise ServiceError(f'ostack: init of {name} failed: {" ".join(cmd[:1] + cmd[3:])}\n'
                           f'--- last lines of {log}:\n' + '\n'.join(lines))
