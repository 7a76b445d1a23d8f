#!/usr/bin/env bash
# Stops exactly the processes that up.sh started, from their PID files.
# Safe to run twice. Usage: down.sh [RUN_DIR]
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
run=${1:-$here/.run}
[ -d "$run/pids" ] || { echo "cluster-down: nothing running under $run"; exit 0; }

# Stop the clients first and etcd last, so that nothing logs a lost store.
for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  f="$run/pids/$name.pid"
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  # A PID file can outlive its process and the PID be reused: stop it only
  # if it still runs our binary.
  if kill -0 "$pid" 2>/dev/null && [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == "$here/bin/$name"* ]]; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    echo "cluster-down: stopped $name ($pid)"
  fi
  rm -f "$f"
done
