#!/usr/bin/env bash
# Builds the local control plane's binaries from the pinned Go modules into
# OUT_DIR (default hack/cluster/bin). cluster-bin.sh calls it on a cache miss,
# with a temporary directory of the cache (make cluster-bin).
# Usage: build.sh [OUT_DIR]
#
# The binaries are a function of what cluster-bin.sh hashes into the cache key
# (go.mod, go.sum, this script, stages.sh, cmd/, the Go toolchain and target):
# nothing else may reach them. -buildvcs=false keeps the clone's commit out of
# etcd and keygen.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/bin}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)

k8s_version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$here/go.mod")
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=$major"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/client-go/pkg/version.gitMajor=$major"
ldflags+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build() { # build OUT PKG (in module DIR)
  local dir=$1 out=$2 pkg=$3
  echo "cluster-bin: building $out ($pkg)"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$bin/$out" "$pkg")
}

build "$here" etcd ./cmd/etcd
build "$here" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build "$here" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build "$here" kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build "$here" kubectl k8s.io/kubernetes/cmd/kubectl
build "$here/kwok" kwok sigs.k8s.io/kwok/cmd/kwok
build "$here" keygen ./cmd/keygen
bash "$here/scripts/stages.sh" "$bin"
echo "cluster-bin: done: $(cd "$bin" && echo *)"
