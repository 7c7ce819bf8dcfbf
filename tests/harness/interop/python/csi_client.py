#!/usr/bin/env python3
"""CSI interop client on grpc C-core (Python grpcio), with the channel's DEFAULT options.

Calls every Identity RPC, then a volume lifecycle (create, controller publish, stage, publish,
unpublish, unstage, controller unpublish, delete) against the driver on a Unix socket. Any RPC
error, or a result that is not what the spec asks for, ends the run with exit status 1.

Usage: csi_client.py SOCKET KUBELET_DIR NAME
The stubs are generated from the repository's proto/csi.proto at run time (grpc_tools.protoc).
"""

import os
import sys
import tempfile

import grpc
from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "..", "..", "proto")
CLIENT = "grpc-python (C-core %s)" % grpc.__version__


def fail(msg):
    print("%s: FAIL: %s" % (CLIENT, msg), file=sys.stderr)
    sys.exit(1)


def gen_stubs():
    out = tempfile.mkdtemp(prefix="csi-interop-py.")
    wkt = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", "-I", PROTO_DIR, "-I", wkt, "--python_out", out,
                      "--grpc_python_out", out, os.path.join(PROTO_DIR, "csi.proto")])
    if rc != 0:
        fail("protoc failed on proto/csi.proto (exit %d)" % rc)
    sys.path.insert(0, out)
    import csi_pb2  # noqa: E402
    import csi_pb2_grpc  # noqa: E402
    return csi_pb2, csi_pb2_grpc


def is_mount_point(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sock, kubelet, name = sys.argv[1:]
    pb, rpc = gen_stubs()

    # Default options: no grpc.default_authority, so C-core sends the socket path (percent-
    # encoded) as :authority, which is what this test is about.
    channel = grpc.insecure_channel("unix:" + sock)
    ident, ctrl, node = rpc.IdentityStub(channel), rpc.ControllerStub(channel), rpc.NodeStub(channel)

    def call(label, fn, req):
        try:
            resp = fn(req, timeout=120)
        except grpc.RpcError as e:
            fail("%s: %s: %s" % (label, e.code().name, e.details()))
        print("%s: %s: OK" % (CLIENT, label))
        return resp

    info = call("GetPluginInfo", ident.GetPluginInfo, pb.GetPluginInfoRequest())
    if not info.name or not info.vendor_version:
        fail("GetPluginInfo: empty name or vendor_version: %r" % info)
    caps = call("GetPluginCapabilities", ident.GetPluginCapabilities, pb.GetPluginCapabilitiesRequest())
    services = {c.service.type for c in caps.capabilities if c.HasField("service")}
    if pb.PluginCapability.Service.CONTROLLER_SERVICE not in services:
        fail("GetPluginCapabilities: no CONTROLLER_SERVICE in %r" % caps)
    call("Probe", ident.Probe, pb.ProbeRequest())

    node_id = call("NodeGetInfo", node.NodeGetInfo, pb.NodeGetInfoRequest()).node_id
    if not node_id:
        fail("NodeGetInfo: empty node_id")
    cap = pb.VolumeCapability(
        mount=pb.VolumeCapability.MountVolume(fs_type="ext4"),
        access_mode=pb.VolumeCapability.AccessMode(
            mode=pb.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))

    vol = call("CreateVolume", ctrl.CreateVolume, pb.CreateVolumeRequest(
        name=name, capacity_range=pb.CapacityRange(required_bytes=1 << 30),
        volume_capabilities=[cap])).volume
    if not vol.volume_id or vol.capacity_bytes < 1 << 30:
        fail("CreateVolume: bad volume %r" % vol)
    vid = vol.volume_id
    pub = call("ControllerPublishVolume", ctrl.ControllerPublishVolume,
               pb.ControllerPublishVolumeRequest(volume_id=vid, node_id=node_id,
                                                 volume_capability=cap, volume_context=vol.volume_context))
    staging = os.path.join(kubelet, "plugins/kubernetes.io/csi/interop", name, "globalmount")
    target = os.path.join(kubelet, "pods", name, "volumes/kubernetes.io~csi/pv/mount")
    os.makedirs(staging, exist_ok=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    call("NodeStageVolume", node.NodeStageVolume, pb.NodeStageVolumeRequest(
        volume_id=vid, publish_context=pub.publish_context, staging_target_path=staging,
        volume_capability=cap, volume_context=vol.volume_context))
    if not is_mount_point(staging):
        fail("NodeStageVolume: %s is not a mount point" % staging)
    call("NodePublishVolume", node.NodePublishVolume, pb.NodePublishVolumeRequest(
        volume_id=vid, publish_context=pub.publish_context, staging_target_path=staging,
        target_path=target, volume_capability=cap, volume_context=vol.volume_context))
    if not is_mount_point(target):
        fail("NodePublishVolume: %s is not a mount point" % target)
    with open(os.path.join(target, "hello"), "w") as f:
        f.write(CLIENT)
    call("NodeUnpublishVolume", node.NodeUnpublishVolume,
         pb.NodeUnpublishVolumeRequest(volume_id=vid, target_path=target))
    if is_mount_point(target):
        fail("NodeUnpublishVolume: %s is still a mount point" % target)
    call("NodeUnstageVolume", node.NodeUnstageVolume,
         pb.NodeUnstageVolumeRequest(volume_id=vid, staging_target_path=staging))
    if is_mount_point(staging):
        fail("NodeUnstageVolume: %s is still a mount point" % staging)
    call("ControllerUnpublishVolume", ctrl.ControllerUnpublishVolume,
         pb.ControllerUnpublishVolumeRequest(volume_id=vid, node_id=node_id))
    call("DeleteVolume", ctrl.DeleteVolume, pb.DeleteVolumeRequest(volume_id=vid))
    channel.close()
    print("%s: all RPCs OK" % CLIENT)


if __name__ == "__main__":
    main()
