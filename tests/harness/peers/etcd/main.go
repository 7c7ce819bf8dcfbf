// etcd for the test cluster (tests/harness/k8s/cluster): etcd's own main, which lives in its root module
// go.etcd.io/etcd/v3; that module replaces its parts by relative paths, so it cannot be
// built from the module proxy, while go.etcd.io/etcd/server/v3 (etcdmain) can.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
