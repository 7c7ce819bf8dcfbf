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

Configured per backend section: `volume_driver = csi_fake_cinder_driver.FileBackedFakeDriver`,
`csi_fake_volume_dir = DIR`; the module must be on cinder-volume's PYTHONPATH.
"""

import os
import subprocess
import time

from oslo_config import cfg
from oslo_log import log as logging

from cinder.tests.fake_driver import FakeLoggingVolumeDriver

LOG = logging.getLogger(__name__)
GiB = 1024 ** 3

FAKE_OPTS = [
    cfg.StrOpt('csi_fake_volume_dir', default='/var/tmp/cinder-csi-ostack/data/cinder/fake-volumes',
               help='Directory of the sparse files that back volumes and snapshots.'),
]


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

    def do_setup(self, context):
        os.makedirs(self._dir, exist_ok=True)
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
                    group_replication_enabled=False)
        self._stats.update(volume_backend_name=self.backend_name, multiattach=True)
