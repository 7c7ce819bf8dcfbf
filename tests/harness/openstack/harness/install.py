"""`ostack install`: Debian packages and the pinned virtualenv. Idempotent and timed."""

import hashlib
import os
import shutil
import subprocess
import time

from . import distro
from .settings import APT_PACKAGES, HERE


def _installed(pkg):
    r = subprocess.run(['dpkg-query', '-W', '-f=${Status}', pkg], capture_output=True, text=True)
    return r.returncode == 0 and 'install ok installed' in r.stdout


def apt():
    missing = [p for p in APT_PACKAGES if not _installed(p)]
    if not missing:
        return 'already installed'
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    subprocess.run(['apt-get', 'update', '-qq'], check=True, env=env)
    # Where no policy-rc.d forbids it (a systemd VM), the postinsts start the distro's
    # daemons on our ports: `daemons` below stops and disables them; ours run from the state dir.
    subprocess.run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', *missing],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return 'installed ' + ' '.join(missing)


def daemons():
    done = distro.stop()
    return '; '.join(done) if done else 'none running'


def _fingerprint(s):
    """What the venv was made from: the pins and the interpreter (a venv of another Python,
    e.g. pyenv's, must not be reused)."""
    h = hashlib.sha256()
    for name in ('requirements.txt', 'constraints.txt'):
        h.update((HERE / name).read_bytes())
    version = subprocess.run([s.python, '-c', 'import sys; print(sys.version)'], check=True,
                             capture_output=True, text=True).stdout
    h.update(os.path.realpath(shutil.which(s.python) or s.python).encode())
    h.update(version.encode())
    return h.hexdigest()


def venv(s):
    marker = s.venv / '.ostack-installed'
    want = _fingerprint(s)
    if marker.exists() and marker.read_text().strip() == want:
        return 'already installed'
    # From scratch: installing over a venv of other pins or another interpreter leaves a mix.
    # Only a venv this harness made (its marker) or one in its state dir is ever removed.
    if s.venv.exists() and not marker.exists() and s.state not in s.venv.parents:
        raise SystemExit(f'ostack: {s.venv} exists but was not made by ostack; remove it or '
                         'point OSTACK_VENV elsewhere')
    shutil.rmtree(s.venv, ignore_errors=True)
    subprocess.run([s.python, '-m', 'venv', str(s.venv)], check=True)
    pip = [str(s.bin('pip')), 'install', '-q', '--disable-pip-version-check',
           '-c', str(HERE / 'constraints.txt')]
    # uWSGI embeds the interpreter it is compiled against, and pip's wheel cache keys it by
    # Python tag only (cp311): a wheel built by another cp311 (pyenv's) loads the wrong
    # stdlib (`No module named '_socket'`). Always compile it for this venv.
    subprocess.run(pip + ['--no-cache-dir', 'uWSGI'], check=True)
    subprocess.run(pip + ['-r', str(HERE / 'requirements.txt')], check=True)
    marker.write_text(want + '\n')
    return 'installed'


def run(s):
    s.state.mkdir(parents=True, exist_ok=True)
    s.state.chmod(0o700)
    for name, step in (('apt', apt), ('distro daemons', daemons), ('venv', lambda: venv(s))):
        t = time.monotonic()
        what = step()
        print(f'ostack install: {name}: {what} in {time.monotonic() - t:.1f} s', flush=True)
