#!/usr/bin/env bash
# Writes bin/kwok-stages.yaml: kwok's own "fast" Stages from its module source
# (Nodes become Ready, Pods become Running, Job Pods complete, deleted Pods
# go), plus one Stage of ours: a Running Pod annotated
# kwok.x-k8s.io/complete=true (or =fail) terminates, so tests can drive a Pod
# through Succeeded or Failed without a kubelet.
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
  for outcome in complete:Succeeded:0 fail:Failed:1; do
    IFS=: read -r value phase code <<<"$outcome"
    cat <<STAGE
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-$value-on-request
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.metadata.annotations["kwok.x-k8s.io/complete"]'
      operator: 'In'
      values: ['$value']
  next:
    statusTemplate: |
      {{ \$now := Now }}
      containerStatuses:
      {{ range \$index, \$item := .spec.containers }}
      - image: {{ \$item.image | Quote }}
        name: {{ \$item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: $code
            finishedAt: {{ \$now | Quote }}
            reason: $( [ "$code" = 0 ] && echo Completed || echo Error )
            startedAt: {{ \$now | Quote }}
      {{ end }}
      phase: $phase
STAGE
  done
} > "$out"
echo "cluster-bin: wrote $out"
