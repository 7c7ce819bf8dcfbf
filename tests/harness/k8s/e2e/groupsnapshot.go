// A Go driver definition for the storage suite's volume group snapshot specs
// (volumegroupsnapshottable). The YAML definitions (-storage.testdriver) cannot name a
// VolumeGroupSnapshotClass (only Go test drivers implement the group snapshot interface,
// VoulmeGroupSnapshottableTestDriver in 1.34, VolumeGroupSnapshottableTestDriver from 1.35:
// not named here, so one source builds in both suites; the suite asserts it), so with them
// those specs always skip. This definition takes the same YAML file, so the driver info
// (SupportedSizeRange: whole GiB) and StorageClass are the ones the other specs use, and
// registers only the group snapshot specs:
//
//	cinder-csi-e2e-1.37 ... -cinder.groupsnapshot-testdriver=tests/harness/k8s/testdriver-local.yaml
//	    [-cinder.groupsnapshot-volume-type=TYPE]   (test cloud: $OSTACK_GROUP_VOLUME_TYPE)
//
// Its specs are named "External Storage [Driver: cinder.csi.openstack.org] [group snapshots:
// Go definition] ...". They run from the 1.37.2 suite (tests/harness/peers/versions, e2e.sh --groups).
//
// One adaptation, with its reason: Cinder's snapshots depend on their volume (Cinder refuses
// to delete a volume that has snapshots, and a member of a group snapshot cannot be deleted
// alone; the local backend refuses the same), and the spec's cleanup deletes the StatefulSet
// and every PVC and waits for their PVs to be deleted before it cleans up its group snapshot.
// So the definition runs the suite's own group snapshot cleanup
// (VolumeGroupSnapshotResource.CleanupResource: delete the VolumeGroupSnapshot, check that
// the deletion policy was honoured, i.e. the content deleted, or retained and then deleted
// by the suite, and that the member snapshot contents are gone) first. A failing
// DeleteVolumeGroupSnapshot, or a content left behind, fails the spec.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"

	"k8s.io/kubernetes/test/e2e/framework"
	e2econfig "k8s.io/kubernetes/test/e2e/framework/config"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	"k8s.io/kubernetes/test/e2e/storage/testsuites"
	"k8s.io/kubernetes/test/e2e/storage/utils"
)

// groupDefinition is the part of a YAML driver definition this one reads.
type groupDefinition struct {
	DriverInfo   storageframework.DriverInfo
	StorageClass struct {
		FromFile string
	}
	ClientNodeName string
}

type groupDriver struct {
	def groupDefinition
}

var (
	_ storageframework.TestDriver          = &groupDriver{}
	_ storageframework.DynamicPVTestDriver = &groupDriver{}
)

// groupVolumeType is the Cinder volume type of the group snapshot specs' volumes (a Cinder
// group holds volumes of one backend; "" keeps the StorageClass's).
var groupVolumeType string

func init() {
	e2econfig.Flags.Var(groupDriverFlag{}, "cinder.groupsnapshot-testdriver",
		"a YAML driver definition (as -storage.testdriver takes) whose driver serves volume "+
			"group snapshots: runs the storage suite's group snapshot specs for it")
	e2econfig.Flags.StringVar(&groupVolumeType, "cinder.groupsnapshot-volume-type", "",
		"StorageClass parameter type of the group snapshot specs' volumes (one backend)")
}

// groupDriverFlag defines the specs while flags are parsed, as -storage.testdriver does.
type groupDriverFlag struct{}

var _ flag.Value = groupDriverFlag{}

func (groupDriverFlag) String() string { return "<.yaml file>" }

func (groupDriverFlag) Set(filename string) error {
	data, err := os.ReadFile(filename)
	if err != nil {
		return err
	}
	d := &groupDriver{}
	if err := yaml.Unmarshal(data, &d.def); err != nil {
		return fmt.Errorf("%s: %w", filename, err)
	}
	info := &d.def.DriverInfo
	if info.Name == "" || d.def.StorageClass.FromFile == "" {
		return fmt.Errorf("%s: DriverInfo.Name and StorageClass.FromFile are needed", filename)
	}
	if info.SupportedFsType.Len() == 0 {
		info.SupportedFsType = sets.NewString("")
	}
	if info.Capabilities == nil {
		info.Capabilities = map[storageframework.Capability]bool{}
	}
	// What this definition is for; the YAML file says false (its definition cannot run them).
	info.Capabilities[storageframework.CapVolumeGroupSnapshot] = true

	var suites []func() storageframework.TestSuite
	for _, s := range testsuites.CSISuites {
		if s().GetTestSuiteInfo().Name == "volumegroupsnapshottable" {
			suites = append(suites, s)
		}
	}
	if len(suites) == 0 {
		return fmt.Errorf("the storage suites of this Kubernetes have no volumegroupsnapshottable suite")
	}
	args := []interface{}{"External Storage"}
	args = append(args, storageframework.GetDriverNameWithFeatureTags(d)...)
	args = append(args, "[group snapshots: Go definition]", func() {
		storageframework.DefineTestSuites(d, suites)
	})
	framework.Describe(args...)
	return nil
}

func (d *groupDriver) GetDriverInfo() *storageframework.DriverInfo { return &d.def.DriverInfo }

func (d *groupDriver) PrepareTest(ctx context.Context, f *framework.Framework) *storageframework.PerTestConfig {
	return &storageframework.PerTestConfig{
		Driver:    d,
		Prefix:    "external",
		Framework: f,
		ClientNodeSelection: e2epod.NodeSelection{
			Name:     d.def.ClientNodeName,
			Selector: map[string]string{"kubernetes.io/os": "linux"},
		},
	}
}

func (d *groupDriver) GetDynamicProvisionStorageClass(ctx context.Context, config *storageframework.PerTestConfig, fsType string) *storagev1.StorageClass {
	f := config.Framework
	items, err := utils.LoadFromManifests(d.def.StorageClass.FromFile)
	framework.ExpectNoError(err, "load storage class from %s", d.def.StorageClass.FromFile)
	gomega.Expect(items).To(gomega.HaveLen(1), "exactly one item from %s", d.def.StorageClass.FromFile)
	framework.ExpectNoError(utils.PatchItems(f, f.Namespace, items...), "patch items")
	sc, ok := items[0].(*storagev1.StorageClass)
	if !ok {
		framework.Failf("storage class from %s", d.def.StorageClass.FromFile)
	}
	if sc.Parameters == nil {
		sc.Parameters = map[string]string{}
	}
	if fsType != "" {
		sc.Parameters["csi.storage.k8s.io/fstype"] = fsType
	}
	if groupVolumeType != "" {
		sc.Parameters["type"] = groupVolumeType
	}
	return storageframework.CopyStorageClass(sc, f.Namespace.Name, "e2e-sc")
}

// GetVolumeGroupSnapshotClass is a class of the driver with no parameters (the group type is
// the driver's default: [BlockStorage] group-type on OpenStack, "local" on the local backend).
// `parameters` carries the suite's deletionPolicy, which is the class's field, not a CSI
// parameter (the driver refuses keys it does not know).
func (d *groupDriver) GetVolumeGroupSnapshotClass(ctx context.Context, config *storageframework.PerTestConfig, parameters map[string]string) *unstructured.Unstructured {
	policy := parameters["deletionPolicy"]
	if policy == "" {
		policy = "Delete"
	}
	ns := config.Framework.Namespace.Name
	registerGroupSnapshotCleanup(config, policy)
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"kind":           "VolumeGroupSnapshotClass",
		"apiVersion":     utils.VolumeGroupSnapshotAPIVersion,
		"metadata":       map[string]interface{}{"name": names.SimpleNameGenerator.GenerateName(ns)},
		"driver":         d.def.DriverInfo.Name,
		"deletionPolicy": policy,
	}}
}

// registerGroupSnapshotCleanup runs the suite's cleanup of the namespace's
// VolumeGroupSnapshots (see the top of the file). Registered while the spec takes its group
// snapshot, so it runs before the spec's own cleanup of the StatefulSet and PVCs (ginkgo runs
// cleanups last in, first out); the spec's own group snapshot cleanup then finds nothing left.
func registerGroupSnapshotCleanup(config *storageframework.PerTestConfig, policy string) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		f := config.Framework
		list, err := f.DynamicClient.Resource(utils.VolumeGroupSnapshotGVR).Namespace(f.Namespace.Name).
			List(ctx, metav1.ListOptions{})
		framework.ExpectNoError(err, "list VolumeGroupSnapshots")
		for i := range list.Items {
			vgs := &list.Items[i]
			ginkgo.By(fmt.Sprintf("cleaning up VolumeGroupSnapshot %s before the PVCs (Cinder snapshots depend on their volumes)", vgs.GetName()))
			r := &storageframework.VolumeGroupSnapshotResource{
				Config: config,
				// What the suite's cleanup reads of the pattern: the policy it checks.
				Pattern: storageframework.TestPattern{
					SnapshotDeletionPolicy: storageframework.TestSnapshotDeletionPolicy(policy),
				},
				VGS: vgs,
			}
			framework.ExpectNoError(r.CleanupResource(ctx, f.Timeouts), "clean up VolumeGroupSnapshot %s", vgs.GetName())
		}
	})
}
