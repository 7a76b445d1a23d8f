#!/usr/bin/env bash
# make demo: a local control plane, the CRDs, the operator on templates/ and
# the examples; prints what the operator made, then keeps running until
# Ctrl-C and stops everything it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run="$root/hack/cluster/.run"
export KUBECONFIG="$run/kubeconfig"
k() { "$root/hack/cluster/bin/kubectl" "$@"; }

started_cluster=false
if [ -f "$run/pids/kube-apiserver.pid" ] && kill -0 "$(cat "$run/pids/kube-apiserver.pid")" 2>/dev/null; then
  echo "demo: reusing the control plane already running (make cluster-down stops it)"
else
  bash hack/cluster/scripts/up.sh
  started_cluster=true
fi

operator_pid=""
cleanup() {
  trap - INT TERM EXIT
  echo
  if [ -n "$operator_pid" ]; then
    echo "demo: stopping the operator"
    kill -TERM "$operator_pid" 2>/dev/null && wait "$operator_pid" 2>/dev/null || true
  fi
  if $started_cluster; then bash hack/cluster/scripts/down.sh; fi
}
trap cleanup INT TERM EXIT

k apply --server-side -f crds/ >/dev/null
k wait --for=condition=Established crd --all --timeout=60s >/dev/null
./bin/operator run --templates templates -v 2 >"$run/logs/operator.log" 2>&1 &
operator_pid=$!
echo "demo: operator running (pid $operator_pid, log $run/logs/operator.log)"
k apply --server-side -f examples/

echo "demo: waiting for every example to be Reconciled..."
for _ in $(seq 60); do
  pending=$(k get memcached,helloworld,appservice,at,mydaemonset,migratedapp -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Reconciled")].status}{"\n"}{end}' | grep -vc True || true)
  [ "$pending" = 0 ] && break
  sleep 1
done
sleep 2 # let the Pods' readiness reach the status

echo; echo "== The custom resources"
k get memcached,helloworld,appservice,at,mydaemonset,migratedapp
echo; echo "== Their children"
k get deployments,services,pods,jobs -l app.kubernetes.io/managed-by=operator -o wide
echo; echo "== The Memcached's status, written by templates/memcached/status.yaml"
k get memcached memcached-sample -o jsonpath='{.status}' | sed 's/^/  /'; echo
echo
echo "demo: try 'KUBECONFIG=$KUBECONFIG hack/cluster/bin/kubectl patch memcached memcached-sample --type=merge -p {\"spec\":{\"size\":5}}'"
echo "demo: running until Ctrl-C"
wait "$operator_pid"
