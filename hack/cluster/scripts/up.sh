#!/usr/bin/env bash
# Starts a local Kubernetes control plane on 127.0.0.1 from the binaries in
# hack/cluster/bin: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok with one fake Node on which Pods become Running.
#
# Usage: up.sh [RUN_DIR]   (default: hack/cluster/.run)
# CLUSTER_MINIMAL=1 starts only etcd and kube-apiserver, with API Priority and
# Fairness enabled as in a real cluster: the plane the benchmark measures on,
# where nothing but the measured client sends requests. (The full plane turns
# APF off, so that tests are never queued behind each other.)
# Ports come from CLUSTER_APISERVER_PORT, CLUSTER_ETCD_PORT and
# CLUSTER_ETCD_PEER_PORT (defaults below the ephemeral range). The state, the
# logs, the PID files and an admin kubeconfig are written under RUN_DIR.
# (No variable here is named ETCD_*: etcd reads those as flags.)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/bin"
run=${1:-$here/.run}
api_port=${CLUSTER_APISERVER_PORT:-16443}
store_port=${CLUSTER_ETCD_PORT:-12379}
store_peer_port=${CLUSTER_ETCD_PEER_PORT:-12380}
node=${CLUSTER_NODE_NAME:-kwok-node-0}
timeout_s=${CLUSTER_START_TIMEOUT:-90}
minimal=${CLUSTER_MINIMAL:-}
[ "$minimal" = 0 ] && minimal=

needed="etcd kube-apiserver kubectl keygen"
[ -n "$minimal" ] || needed="$needed kube-controller-manager kube-scheduler kwok"
for b in $needed; do
  [ -x "$bin/$b" ] || { echo "cluster-up: $bin/$b is missing: run 'make cluster-bin'" >&2; exit 1; }
done

mkdir -p "$run"
run=$(cd "$run" && pwd)
if compgen -G "$run/pids/*.pid" >/dev/null; then
  for f in "$run"/pids/*.pid; do
    if kill -0 "$(cat "$f")" 2>/dev/null; then
      echo "cluster-up: already running (PID file $f); run 'make cluster-down' first" >&2
      exit 1
    fi
  done
fi
rm -rf "$run/etcd" "$run/pids" "$run/logs" "$run/pki"
mkdir -p "$run/pids" "$run/logs" "$run/pki"

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$token,admin,admin,system:masters" > "$run/tokens.csv"
"$bin/keygen" "$run/pki/sa.key" "$run/pki/sa.pub"

# start NAME ARGS...: runs a component in the background, its log in logs/NAME.log.
start() {
  local name=$1; shift
  "$@" >"$run/logs/$name.log" 2>&1 &
  echo $! > "$run/pids/$name.pid"
}

# fail NAME: a component did not come up; show why and stop the others.
fail() {
  echo "cluster-up: $1 did not start; last lines of $run/logs/$1.log:" >&2
  tail -n 25 "$run/logs/$1.log" >&2 || true
  "$here/scripts/down.sh" "$run" >/dev/null 2>&1 || true
  exit 1
}

# wait_for NAME WHAT CMD...: polls CMD until it succeeds, failing early when
# the component NAME has exited.
wait_for() {
  local name=$1 what=$2; shift 2
  local deadline=$((SECONDS + timeout_s))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$run/pids/$name.pid")" 2>/dev/null || fail "$name"
    if [ $SECONDS -ge $deadline ]; then
      echo "cluster-up: timed out after ${timeout_s}s waiting for $what" >&2
      fail "$name"
    fi
    sleep 0.2
  done
}

start etcd "$bin/etcd" --name=default --data-dir="$run/etcd" \
  --listen-client-urls="http://127.0.0.1:$store_port" --advertise-client-urls="http://127.0.0.1:$store_port" \
  --listen-peer-urls="http://127.0.0.1:$store_peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$store_peer_port" \
  --initial-cluster="default=http://127.0.0.1:$store_peer_port" --unsafe-no-fsync=true --log-level=warn

start kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$store_port" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" \
  --cert-dir="$run/pki" --token-auth-file="$run/tokens.csv" \
  --authorization-mode=RBAC --allow-privileged=true \
  --endpoint-reconciler-type=none --service-cluster-ip-range=10.96.0.0/16 \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$run/pki/sa.pub" --service-account-signing-key-file="$run/pki/sa.key" \
  --enable-priority-and-fairness="$([ -n "$minimal" ] && echo true || echo false)" --v=1

# The self-signed serving certificate is written by the API server itself,
# followed by the CA that signed it: clients trust the CA alone.
wait_for kube-apiserver "the serving certificate" test -s "$run/pki/apiserver.crt"
awk 'n>=1 {print} /-----END CERTIFICATE-----/ {n++}' "$run/pki/apiserver.crt" > "$run/pki/ca.crt"
[ -s "$run/pki/ca.crt" ] || cp "$run/pki/apiserver.crt" "$run/pki/ca.crt"

kc="$run/kubeconfig"
KUBECONFIG="$kc" "$bin/kubectl" config set-cluster local --server="https://127.0.0.1:$api_port" \
  --certificate-authority="$run/pki/ca.crt" --embed-certs=true >/dev/null
KUBECONFIG="$kc" "$bin/kubectl" config set-credentials admin --token="$token" >/dev/null
KUBECONFIG="$kc" "$bin/kubectl" config set-context local --cluster=local --user=admin >/dev/null
KUBECONFIG="$kc" "$bin/kubectl" config use-context local >/dev/null
k() { "$bin/kubectl" --kubeconfig="$kc" "$@"; }

wait_for kube-apiserver "/readyz" k get --raw /readyz

# start_nodes: the controllers, the scheduler and kwok with one Ready Node.
start_nodes() {
start kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
  --authentication-skip-lookup=true --bind-address=127.0.0.1 --secure-port=0 \
  --leader-elect=false --root-ca-file="$run/pki/ca.crt" \
  --service-account-private-key-file="$run/pki/sa.key" --use-service-account-credentials=false \
  --concurrent-gc-syncs=5 --v=1
start kube-scheduler "$bin/kube-scheduler" \
  --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
  --authentication-skip-lookup=true --bind-address=127.0.0.1 --secure-port=0 \
  --leader-elect=false --v=1
start kwok "$bin/kwok" --kubeconfig="$kc" --config="$bin/kwok-stages.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --cidr=10.244.0.0/16 --node-ip=10.244.0.1

k apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: $node
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $node
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
NODE
wait_for kwok "node $node to be Ready" \
  sh -c "'$bin/kubectl' --kubeconfig='$kc' get node '$node' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
# The namespace controller and the service account controller are up once
# "default" has its service account: Pods can be created from here on.
wait_for kube-controller-manager "the default service account" k -n default get serviceaccount default
for c in kube-controller-manager kube-scheduler; do
  kill -0 "$(cat "$run/pids/$c.pid")" 2>/dev/null || fail "$c"
done
}
[ -n "$minimal" ] || start_nodes

# A test that starts its own control plane passes its PID: when that process
# goes (even killed by a timeout), the control plane goes with it.
if [ -n "${CLUSTER_OWNER_PID:-}" ]; then
  nohup bash -c "while kill -0 $CLUSTER_OWNER_PID 2>/dev/null; do sleep 1; done; '$here/scripts/down.sh' '$run'" \
    >"$run/logs/watchdog.log" 2>&1 &
fi

if [ -n "$minimal" ]; then
  cat <<MSG
cluster-up: minimal control plane (etcd + kube-apiserver, APF on) ready at https://127.0.0.1:$api_port
  export KUBECONFIG=$kc
  logs: $run/logs   stop: hack/cluster/scripts/down.sh $run
MSG
else
  cat <<MSG
cluster-up: control plane ready at https://127.0.0.1:$api_port (node $node Ready)
  export KUBECONFIG=$kc
  kubectl get nodes
  logs: $run/logs   stop: make cluster-down
MSG
fi
