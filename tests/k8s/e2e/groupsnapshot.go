// A Go driver definition for the storage suite's volume group snapshot specs
// (volumegroupsnapshottable). The YAML definitions (-storage.testdriver) cannot name a
// VolumeGroupSnapshotClass in Kubernetes 1.34 (only Go test drivers implement
// VoulmeGroupSnapshottableTestDriver), so with them those specs always skip. This definition
// takes the same YAML file, so the driver info and StorageClass are the ones the other specs
// use, and registers only the group snapshot specs:
//
//	cinder-csi-e2e ... -cinder.groupsnapshot-testdriver=tests/k8s/testdriver-local.yaml
//	    [-cinder.groupsnapshot-volume-type=TYPE]   (test cloud: $OSTACK_GROUP_VOLUME_TYPE)
//
// Its specs are named "External Storage [Driver: cinder.csi.openstack.org] [group snapshots:
// Go definition] ...".
//
// One adaptation, with its reason: Cinder's snapshots depend on their volume (Cinder refuses
// to delete a volume that has snapshots, and a member of a group snapshot cannot be deleted
// alone), and the spec leaves its VolumeGroupSnapshot to the namespace's deletion, after its
// own cleanup has waited for the source PVs to be deleted. So the definition deletes the
// spec's VolumeGroupSnapshots (and waits until their contents, i.e. the CSI group snapshots,
// are gone) before that cleanup runs. A DeleteVolumeGroupSnapshot that fails, or leaves a
// content behind, fails the spec.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	_ storageframework.TestDriver                         = &groupDriver{}
	_ storageframework.DynamicPVTestDriver                = &groupDriver{}
	_ storageframework.VoulmeGroupSnapshottableTestDriver = &groupDriver{}
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

func (d *groupDriver) SkipUnsupportedTest(pattern storageframework.TestPattern) {}

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
	registerGroupSnapshotCleanup(config.Framework)
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"kind":           "VolumeGroupSnapshotClass",
		"apiVersion":     utils.VolumeGroupSnapshotAPIVersion,
		"metadata":       map[string]interface{}{"name": names.SimpleNameGenerator.GenerateName(ns)},
		"driver":         d.def.DriverInfo.Name,
		"deletionPolicy": policy,
	}}
}

// registerGroupSnapshotCleanup deletes the namespace's VolumeGroupSnapshots and waits until
// their contents are gone. Registered while the spec takes its group snapshot, so it runs
// before the spec's own cleanup of pods and PVCs (ginkgo runs cleanups last in, first out).
func registerGroupSnapshotCleanup(f *framework.Framework) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		dc := f.DynamicClient
		ns := f.Namespace.Name
		list, err := dc.Resource(utils.VolumeGroupSnapshotGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		framework.ExpectNoError(err, "list VolumeGroupSnapshots")
		var contents []string
		for _, vgs := range list.Items {
			if name, ok, _ := unstructured.NestedString(vgs.Object, "status", "boundVolumeGroupSnapshotContentName"); ok && name != "" {
				contents = append(contents, name)
			}
			ginkgo.By(fmt.Sprintf("deleting VolumeGroupSnapshot %s before the PVCs (Cinder snapshots depend on their volumes)", vgs.GetName()))
			err := dc.Resource(utils.VolumeGroupSnapshotGVR).Namespace(ns).Delete(ctx, vgs.GetName(), metav1.DeleteOptions{})
			framework.ExpectNoError(err, "delete VolumeGroupSnapshot %s", vgs.GetName())
		}
		for _, name := range contents {
			gomega.Eventually(ctx, func(ctx context.Context) error {
				_, err := dc.Resource(utils.VolumeGroupSnapshotContentGVR).Get(ctx, name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
					return nil
				case err != nil:
					return err
				}
				return fmt.Errorf("VolumeGroupSnapshotContent %s still exists", name)
			}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(gomega.Succeed(),
				"the group snapshot of content %s is deleted (DeleteVolumeGroupSnapshot)", name)
		}
	})
}
