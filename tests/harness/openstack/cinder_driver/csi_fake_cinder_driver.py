"""Cinder volume driver for the test cloud: every volume is a sparse file.

Built on cinder.tests.fake_driver.FakeLoggingVolumeDriver (shipped in the cinder wheel), but
unlike it the data is real:
- a volume is `<dir>/volume-<id>`, a sparse file of the volume's size;
- a snapshot is `<dir>/snapshot-<id>`, a COPY of the volume file (reflink when the filesystem
  can, else a sparse copy), so data written after the snapshot does not leak into it;
- create-from-snapshot and clone copy the data, then grow the file to the new size;
- extend grows the file (the test hypervisor then refreshes the loop device's capacity);
- connections are os-brick `local` ones whose `device_path` is the file, so cinder-backup
  (posix driver) reads and restores real bytes, and the hypervisor puts a loop device on it;
- a deliberately slow attach, for the alert tests: while `<dir>/attach-delay` exists, each of
  its lines `PREFIX SECONDS` makes initialize_connection (Nova's attach) wait SECONDS for a
  volume whose PVC name (metadata `csi.storage.k8s.io/pvc/name`) or name starts with PREFIX.
- consistent group snapshots, as a storage array makes them: the backend reports
  `consistent_group_snapshot_enabled`, and a group snapshot of a group type with that spec
  copies every member while the writes to all of them are held still. Writers reach a volume
  file through a loop device (the test hypervisor's attachment) with a filesystem mounted on
  this host (the node), so each such filesystem is frozen (FIFREEZE) for the copies and thawed
  (FITHAW) after, also on errors; the frozen mount points are written to a file first, so a
  cinder-volume killed in between thaws them when it starts again. A member attached with no
  mounted filesystem (raw block: writes that cannot be held) fails the group snapshot rather
  than give a torn one. Group types without the spec go Cinder's generic way (one snapshot
  after another), which the CSI driver refuses to use.

Configured per backend section: `volume_driver = csi_fake_cinder_driver.FileBackedFakeDriver`,
`csi_fake_volume_dir = DIR`; the module must be on cinder-volume's PYTHONPATH.
"""

import fcntl
import glob
import json
import os
import subprocess
import time

from oslo_config import cfg
from oslo_log import log as logging

from cinder import exception
from cinder.tests.fake_driver import FakeLoggingVolumeDriver
from cinder.volume import volume_utils

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3

FAKE_OPTS = [
    cfg.StrOpt('csi_fake_volume_dir', default='/var/tmp/cinder-csi-ostack/data/cinder/fake-volumes',
               help='Directory of the sparse files that back volumes and snapshots.'),
    cfg.IntOpt('csi_fake_capacity_gb', default=0,
               help='Capacity the pool reports (GiB); 0: infinite, as the parent reports.'),
]


# linux/fs.h: _IOWR('X', 119, int) and _IOWR('X', 120, int).
FIFREEZE = 0xC0045877
FITHAW = 0xC0045878


def _loops_over(path):
    """/dev/loopN of every loop device whose backing file is `path`."""
    want = os.path.realpath(path)
    out = []
    for f in glob.glob('/sys/block/loop*/loop/backing_file'):
        try:
            with open(f) as fh:
                backing = fh.read().strip()
        except OSError:
            continue
        if os.path.realpath(backing) == want:
            out.append('/dev/' + f.split('/')[3])
    return out


def _mount_of(device):
    """A mount point of the filesystem on `device` in this mount namespace, or None. btrfs
    shows an anonymous device number in mountinfo, so the source is compared too."""
    st = os.stat(device)
    want = f'{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}'
    real = os.path.realpath(device)
    with open('/proc/self/mountinfo') as fh:
        for line in fh:
            head, _, tail = line.partition(' - ')
            f = head.split()
            t = tail.split()
            source = t[1] if len(t) > 1 else ''
            if f[2] == want or (source.startswith('/') and os.path.realpath(source) == real):
                return f[4].encode().decode('unicode_escape')
    return None


def _thaw(mount_points):
    for m in mount_points:
        try:
            fd = os.open(m, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fcntl.ioctl(fd, FITHAW, 0)
            LOG.warning('thawed %s', m)
        except OSError:
            pass  # EINVAL: not frozen
        finally:
            os.close(fd)


def _copy(src, dst):
    # --sparse=always keeps holes holes; --reflink=auto shares extents where supported.
    tmp = dst + '.part'
    subprocess.run(['cp', '--reflink=auto', '--sparse=always', src, tmp], check=True)
    os.replace(tmp, dst)


class FileBackedFakeDriver(FakeLoggingVolumeDriver):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(FAKE_OPTS)
        self.backend_name = self.configuration.safe_get('volume_backend_name') or 'fake'

    @property
    def _dir(self):
        return self.configuration.csi_fake_volume_dir

    def _path(self, volume):
        return os.path.join(self._dir, 'volume-%s' % volume['id'])

    def _snap_path(self, snapshot):
        return os.path.join(self._dir, 'snapshot-%s' % snapshot['id'])

    def _grow(self, path, size_gb):
        """Create the file if missing; make it size_gb (never shrinks)."""
        os.makedirs(self._dir, exist_ok=True)
        with open(path, 'ab') as f:
            if f.seek(0, os.SEEK_END) < size_gb * GiB:
                f.truncate(size_gb * GiB)

    @property
    def _frozen_record(self):
        return os.path.join(self._dir, 'frozen-%s.json' % self.backend_name)

    def do_setup(self, context):
        os.makedirs(self._dir, exist_ok=True)
        # A cinder-volume killed during a group snapshot left these frozen: every writer on
        # them blocked until someone thaws them.
        try:
            with open(self._frozen_record) as fh:
                _thaw(json.load(fh))
            os.unlink(self._frozen_record)
        except FileNotFoundError:
            pass
        super().do_setup(context)

    def create_volume(self, volume):
        ret = super().create_volume(volume)
        self._grow(self._path(volume), volume['size'])
        return ret

    def delete_volume(self, volume):
        try:
            os.unlink(self._path(volume))
        except FileNotFoundError:
            pass

    def create_snapshot(self, snapshot):
        _copy(os.path.join(self._dir, 'volume-%s' % snapshot['volume_id']),
              self._snap_path(snapshot))

    def delete_snapshot(self, snapshot):
        try:
            os.unlink(self._snap_path(snapshot))
        except FileNotFoundError:
            pass

    def create_volume_from_snapshot(self, volume, snapshot):
        _copy(self._snap_path(snapshot), self._path(volume))
        self._grow(self._path(volume), volume['size'])

    def create_cloned_volume(self, volume, src_vref):
        _copy(self._path(src_vref), self._path(volume))
        self._grow(self._path(volume), volume['size'])

    def revert_to_snapshot(self, context, volume, snapshot):
        _copy(self._snap_path(snapshot), self._path(volume))
        self._grow(self._path(volume), volume['size'])

    def extend_volume(self, volume, new_size):
        self._grow(self._path(volume), new_size)

    def _attach_delay(self, volume):
        """Seconds `<dir>/attach-delay` asks this volume's attach to wait (0: none)."""
        try:
            lines = open(os.path.join(self._dir, 'attach-delay')).read().splitlines()
        except OSError:
            return 0
        meta = getattr(volume, 'metadata', None) or {}
        names = [meta.get('csi.storage.k8s.io/pvc/name') or '', volume.get('display_name') or '']
        for line in lines:
            parts = line.split()
            if len(parts) == 2 and any(n.startswith(parts[0]) for n in names if n):
                return float(parts[1])
        return 0

    def create_group_snapshot(self, context, group_snapshot, snapshots):
        if not volume_utils.is_group_a_cg_snapshot_type(group_snapshot):
            raise NotImplementedError()  # Cinder's generic path: one snapshot after another
        mounts = []
        for s in snapshots:
            for loop in _loops_over(os.path.join(self._dir, 'volume-%s' % s.volume_id)):
                m = _mount_of(loop)
                if m is None:
                    raise exception.VolumeDriverException(message=(
                        'volume %s is attached as %s with no filesystem mounted on this host: '
                        'its writes cannot be held still for a consistent group snapshot'
                        % (s.volume_id, loop)))
                mounts.append(m)
        with open(self._frozen_record, 'w') as fh:
            json.dump(mounts, fh)
        frozen = []
        try:
            for m in mounts:
                fd = os.open(m, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    fcntl.ioctl(fd, FIFREEZE, 0)
                except OSError:
                    os.close(fd)
                    raise
                frozen.append(fd)
            LOG.info('group snapshot %s: %d filesystem(s) frozen, copying %d member(s)',
                     group_snapshot.id, len(frozen), len(snapshots))
            for s in snapshots:
                _copy(os.path.join(self._dir, 'volume-%s' % s.volume_id), self._snap_path(s))
        finally:
            for fd in frozen:
                try:
                    fcntl.ioctl(fd, FITHAW, 0)
                finally:
                    os.close(fd)
            os.unlink(self._frozen_record)
        return ({'status': 'available'},
                [{'id': s.id, 'status': 'available'} for s in snapshots])

    def initialize_connection(self, volume, connector):
        delay = self._attach_delay(volume)
        if delay:
            LOG.info('attach of %s delayed %s s (attach-delay)', volume['id'], delay)
            time.sleep(delay)
        info = super().initialize_connection(volume, connector)
        if not os.path.exists(self._path(volume)):
            self._grow(self._path(volume), volume['size'])
        info['driver_volume_type'] = 'local'
        info['data']['device_path'] = self._path(volume)
        info['data']['volume_id'] = volume['id']
        return info

    def validate_connector(self, connector):
        # The LVM/iSCSI parent demands an 'initiator'; a local file needs nothing.
        return

    def _update_volume_stats(self):
        super()._update_volume_stats()
        pool = self._stats['pools'][0]
        pool.update(pool_name=self.backend_name, multiattach=True, reserved_percentage=0,
                    thin_provisioning_support=True, thick_provisioning_support=False,
                    max_over_subscription_ratio=20.0, replication_enabled=False,
                    group_replication_enabled=False, consistent_group_snapshot_enabled=True)
        capacity = self.configuration.safe_get('csi_fake_capacity_gb')
        if capacity:
            # A finite capacity outweighs 'infinite' in the CapacityWeigher (render.py).
            pool.update(total_capacity_gb=capacity, free_capacity_gb=capacity)
        self._stats.update(volume_backend_name=self.backend_name, multiattach=True)
