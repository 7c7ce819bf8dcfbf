"""Loop devices and mounts, restricted to what the test cloud owns: a loop device is ours only
when its backing file lies in our state directory. Nothing here touches any other loop device
(other tests on this machine use their own)."""

import os
import subprocess
from pathlib import Path

SYS_BLOCK = Path('/sys/block')


def backing_file(dev):
    """Backing file of /dev/loopN ('' when unbound), without the ' (deleted)' suffix."""
    name = os.path.basename(dev)
    try:
        raw = (SYS_BLOCK / name / 'loop' / 'backing_file').read_text().rstrip('\n')
    except OSError:
        return ''
    return raw.removesuffix(' (deleted)')


def owned(prefix):
    """{'/dev/loopN': backing file} for every loop device backed by a file under prefix."""
    prefix = str(prefix).rstrip('/') + '/'
    out = {}
    for d in sorted(SYS_BLOCK.glob('loop*')):
        f = backing_file(d.name)
        if f.startswith(prefix):
            out[f'/dev/{d.name}'] = f
    return out


def attach(path):
    r = subprocess.run(['losetup', '--find', '--show', str(path)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise OSError(f'losetup --find --show {path}: {r.stderr.strip()}')
    return r.stdout.strip()


def detach(dev, path):
    """Detach dev only if it is still backed by path (it may have been reused meanwhile)."""
    if backing_file(dev) != str(path):
        return False
    r = subprocess.run(['losetup', '-d', dev], capture_output=True, text=True)
    return r.returncode == 0


def size_bytes(dev):
    name = os.path.basename(dev)
    return int((SYS_BLOCK / name / 'size').read_text()) * 512


def refresh_capacity(dev, path):
    """`losetup -c` when the backing file grew (Cinder extend): the size NodeExpand sees."""
    try:
        want = os.stat(path).st_size
    except FileNotFoundError:
        return False
    if want != size_bytes(dev) and backing_file(dev) == str(path):
        subprocess.run(['losetup', '-c', dev], check=False)
        return True
    return False


def mounts_of(dev):
    """Mount points whose source is dev, deepest first."""
    try:
        rdev = os.stat(dev).st_rdev
    except FileNotFoundError:
        return []
    want = f'{os.major(rdev)}:{os.minor(rdev)}'
    out = []
    for line in Path('/proc/self/mountinfo').read_text().splitlines():
        f = line.split()
        if f[2] == want:
            out.append(f[4].encode().decode('unicode_escape'))
    return sorted(out, key=len, reverse=True)


def unmount_all(dev):
    """Unmount every mount of dev (lazily if busy); returns the mount points."""
    points = mounts_of(dev)
    for p in points:
        if subprocess.run(['umount', p], capture_output=True).returncode != 0:
            subprocess.run(['umount', '-l', p], capture_output=True)
    return points
