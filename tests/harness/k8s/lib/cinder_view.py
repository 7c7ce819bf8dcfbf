#!/usr/bin/env python3
"""What the test cloud's Cinder says of a volume, in the cluster's node names, for the
multi-node tests on the openstack backend (tests/harness/k8s/multinode.sh, failover.sh).

  cinder_view.py record VOLUME_ID       "ZONE NODE..." (the nodes whose servers hold an
                                        attachment of it, in any status, sorted) or "gone"
  cinder_view.py watch VOLUME_ID FILE   every 0.2 s until killed: a moment Cinder lists
                                        attachments of the volume to two servers or more is
                                        appended to FILE ("HH:MM:SS node-1 node-3")

Node I is the test cloud's server OSTACK_NODE_I_ID (the env of `tests/harness/openstack/ostack env`,
which the caller has sourced); another server shows as its id. Admin calls, keep-alive.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'openstack'))

from harness.rest import ApiError, admin  # noqa: E402
from harness.settings import CINDER_URL  # noqa: E402


def node_names():
    names = {}
    for i in range(1, int(os.environ.get('OSTACK_NODE_COUNT', '0')) + 1):
        names[os.environ[f'OSTACK_NODE_{i}_ID']] = os.environ[f'OSTACK_NODE_{i}_NAME']
    if not names:
        sys.exit('cinder_view: no OSTACK_NODE_* in the environment (source the test cloud env)')
    return names


def servers(client, names, vid):
    """Node names (or server ids) of every attachment of volume vid, whatever its status:
    Cinder's own record, reserved and attaching ones included."""
    atts = client.get(f'{CINDER_URL}/attachments?all_tenants=1&volume_id={vid}')['attachments']
    return sorted({names.get(a['instance'], a['instance']) for a in atts if a.get('instance')})


def record(vid):
    client, names = admin(), node_names()
    try:
        vol = client.get(f'{CINDER_URL}/volumes/{vid}')['volume']
    except ApiError as e:
        if e.status == 404:
            print('gone')
            return
        raise
    print(' '.join([vol['availability_zone']] + servers(client, names, vid)))


def watch(vid, out):
    client, names = admin(), node_names()
    while True:
        try:
            seen = servers(client, names, vid)
        except (ApiError, OSError):
            seen = []
        if len(seen) > 1:
            with open(out, 'a') as f:
                f.write(time.strftime('%H:%M:%S ') + ' '.join(seen) + '\n')
        time.sleep(0.2)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == 'record':
        record(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == 'watch':
        watch(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
