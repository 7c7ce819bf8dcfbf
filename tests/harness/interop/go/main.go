// CSI interop client on grpc-go, with the channel's DEFAULT options (grpc-go sends
// ":authority: localhost" on a Unix socket).
//
// Calls every Identity RPC, then a volume lifecycle (create, controller publish, stage,
// publish, unpublish, unstage, controller unpublish, delete) against the driver. Any RPC
// error, or a result that is not what the spec asks for, ends the run with exit status 1.
//
// Usage: csi-interop-go SOCKET KUBELET_DIR NAME
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const client = "grpc-go (" + grpc.Version + ")"

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, client+": FAIL: "+format+"\n", a...)
	os.Exit(1)
}

func ok(label string) { fmt.Printf("%s: %s: OK\n", client, label) }

func check(label string, err error) {
	if err != nil {
		fail("%s: %v", label, err)
	}
	ok(label)
}

func isMountPoint(path string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		fail("reading mountinfo: %v", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) > 4 && fields[4] == path {
			return true
		}
	}
	return false
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: csi-interop-go SOCKET KUBELET_DIR NAME")
		os.Exit(2)
	}
	sock, kubelet, name := os.Args[1], os.Args[2], os.Args[3]
	// Default options; plaintext credentials are required to dial without TLS.
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("dial: %v", err)
	}
	defer conn.Close()
	ident, ctrl, node := csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	info, err := ident.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	check("GetPluginInfo", err)
	if info.GetName() == "" || info.GetVendorVersion() == "" {
		fail("GetPluginInfo: empty name or vendor_version: %v", info)
	}
	caps, err := ident.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	check("GetPluginCapabilities", err)
	hasController := false
	for _, c := range caps.GetCapabilities() {
		if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
			hasController = true
		}
	}
	if !hasController {
		fail("GetPluginCapabilities: no CONTROLLER_SERVICE in %v", caps)
	}
	_, err = ident.Probe(ctx, &csi.ProbeRequest{})
	check("Probe", err)

	ni, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	check("NodeGetInfo", err)
	nodeID := ni.GetNodeId()
	if nodeID == "" {
		fail("NodeGetInfo: empty node_id")
	}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	cv, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{capability},
	})
	check("CreateVolume", err)
	vol := cv.GetVolume()
	if vol.GetVolumeId() == "" || vol.GetCapacityBytes() < 1<<30 {
		fail("CreateVolume: bad volume %v", vol)
	}
	vid := vol.GetVolumeId()
	pub, err := ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vid, NodeId: nodeID, VolumeCapability: capability, VolumeContext: vol.GetVolumeContext(),
	})
	check("ControllerPublishVolume", err)
	staging := filepath.Join(kubelet, "plugins/kubernetes.io/csi/interop", name, "globalmount")
	target := filepath.Join(kubelet, "pods", name, "volumes/kubernetes.io~csi/pv/mount")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		fail("mkdir: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		fail("mkdir: %v", err)
	}
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: vid, PublishContext: pub.GetPublishContext(), StagingTargetPath: staging,
		VolumeCapability: capability, VolumeContext: vol.GetVolumeContext(),
	})
	check("NodeStageVolume", err)
	if !isMountPoint(staging) {
		fail("NodeStageVolume: %s is not a mount point", staging)
	}
	_, err = node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: vid, PublishContext: pub.GetPublishContext(), StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: capability, VolumeContext: vol.GetVolumeContext(),
	})
	check("NodePublishVolume", err)
	if !isMountPoint(target) {
		fail("NodePublishVolume: %s is not a mount point", target)
	}
	if err := os.WriteFile(filepath.Join(target, "hello"), []byte(client), 0o644); err != nil {
		fail("writing into the published volume: %v", err)
	}
	_, err = node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vid, TargetPath: target})
	check("NodeUnpublishVolume", err)
	if isMountPoint(target) {
		fail("NodeUnpublishVolume: %s is still a mount point", target)
	}
	_, err = node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vid, StagingTargetPath: staging})
	check("NodeUnstageVolume", err)
	if isMountPoint(staging) {
		fail("NodeUnstageVolume: %s is still a mount point", staging)
	}
	_, err = ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vid, NodeId: nodeID})
	check("ControllerUnpublishVolume", err)
	_, err = ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vid})
	check("DeleteVolume", err)
	fmt.Printf("%s: all RPCs OK\n", client)
}
