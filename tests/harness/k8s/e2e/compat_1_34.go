//go:build !k8s_1_37

// What differs between the Kubernetes suites this package is built in: 1.34's here,
// compat_1_37.go for 1.37's (tests/harness/peers/versions builds that one with -tags k8s_1_37).
package main

import (
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"

	// Gomega prints API objects as YAML, as in e2e.test.
	_ "k8s.io/kubernetes/test/utils/format"
)

// SkipUnsupportedTest skips nothing: the definition registers only the suite it serves.
func (d *groupDriver) SkipUnsupportedTest(pattern storageframework.TestPattern) {}
