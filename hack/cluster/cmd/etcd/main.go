// Command etcd is etcd's own main, built at the version k8s.io/kubernetes
// requires, so the test control plane needs no downloaded binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
