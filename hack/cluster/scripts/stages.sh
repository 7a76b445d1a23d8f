#!/usr/bin/env bash
# Writes OUT_DIR/kwok-stages.yaml (default hack/cluster/bin): kwok's own
# "fast" Stages from its module source (Nodes become Ready, Pods become
# Running, Job Pods complete, deleted Pods go). Tests end other Pods by
# writing their status phase: no Stage selects a Succeeded or Failed Pod, so
# kwok leaves it as written.
# Usage: stages.sh [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
out="${1:-$here/bin}/kwok-stages.yaml"
{
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$src/$f"
  done
} > "$out"
echo "cluster-bin: wrote $out"
