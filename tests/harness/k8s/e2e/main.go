// The Kubernetes "External Storage" e2e suite (k8s.io/kubernetes/test/e2e/storage/external and
// the storage test suites it defines) as a small binary of its own: the same specs e2e.test runs
// for `-storage.testdriver=FILE`, without the thousands of unrelated specs e2e.test compiles in.
//
//	cinder-csi-e2e -kubeconfig=K -storage.testdriver=FILE [-ginkgo.focus=RE] [-ginkgo.skip=RE] ...
//	ginkgo -procs=N cinder-csi-e2e.test -- -kubeconfig=K ...   (parallel; a link named *.test)
//
// Flags are e2e.test's: the framework's common and cluster flags, the storage.* config flags and
// the ginkgo.* flags. Exit status 0 only when every spec that ran passed.
package main

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	e2econfig "k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"

	// Define and freeze the feature constants the specs are labelled with.
	_ "k8s.io/kubernetes/test/e2e/feature"
	// The External Storage driver definitions (-storage.testdriver) and, through them, every
	// storage test suite (provisioning, snapshots, expansion, topology, volume limits, ...).
	_ "k8s.io/kubernetes/test/e2e/storage/external"

	// Reconfigure the framework as e2e.test does: failure dumps, metrics, node checks.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"

	// Logging flags (-v) as in e2e.test.
	_ "k8s.io/component-base/logs/testinit"
)

// suite stands in for *testing.T: ginkgo only needs Fail().
type suite struct{ failed bool }

func (s *suite) Fail() { s.failed = true }

func main() {
	// The ginkgo CLI (parallel runs) passes -test.* flags to a precompiled suite.
	testing.Init()
	// The storage.testdriver flag defines the External Storage specs while flags are parsed.
	e2econfig.CopyFlags(e2econfig.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	// Files the driver definition names (StorageClass.FromFile, ...): absolute, or relative to
	// -repo-root; then the manifests e2e.test embeds.
	if framework.TestContext.RepoRoot != "" {
		testfiles.AddFileSource(testfiles.RootFileSource{Root: framework.TestContext.RepoRoot})
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())

	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	s := &suite{}
	ok := ginkgo.RunSpecs(s, "cinder-csi External Storage", suiteConfig, reporterConfig)
	logs.FlushLogs()
	if !ok || s.failed {
		os.Exit(1)
	}
}
