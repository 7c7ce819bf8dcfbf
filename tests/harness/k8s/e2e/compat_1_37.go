//go:build k8s_1_37

// What differs in Kubernetes 1.37's suite from 1.34's (compat_1_34.go).
package main

import (
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"

	// Gomega prints API objects as YAML, as in e2e.test (moved under ktesting in 1.37).
	_ "k8s.io/kubernetes/test/utils/ktesting/format"
)

// SkipUnsupportedTest skips nothing (1.37: a reason to skip is returned, "" for none).
func (d *groupDriver) SkipUnsupportedTest(pattern storageframework.TestPattern) string { return "" }
