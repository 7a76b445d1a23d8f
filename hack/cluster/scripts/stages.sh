#!/usr/bin/env bash
# Writes bin/kwok-stages.yaml: kwok's own "fast" Stages from its module source
# (Nodes become Ready, Pods become Running, Job Pods complete, deleted Pods
# go). Tests end other Pods by writing their status phase: no Stage selects
# a Succeeded or Failed Pod, so kwok leaves it as written.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
out="$here/bin/kwok-stages.yaml"
{
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$src/$f"
  done
} > "$out"
echo "cluster-bin: wrote $out"
