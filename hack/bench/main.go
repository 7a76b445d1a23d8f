// Command bench measures the operator against the limit, a minimal client
// doing exactly the requests the work needs, on the same control plane in
// the same run, and writes docs/benchmarks.{md,json,png}; with -kind chart
// the BenchApp is served by a Helm chart (hack/bench/charts/benchapp) and
// the report is docs/benchmarks-chart.{md,json,png}.
//
//	go run . -n 1000,10000 -rest 60s -edits 200 -out ../../docs
//	go run . -kind chart -n 1000 -out ../../docs
//
// For each N it runs each client's cold start -runs times (default 3),
// interleaved limit, operator, limit, ..., each on a fresh control plane of
// only etcd and kube-apiserver (API Priority and Fairness on): the limit
// (cmd/limit, a binary of its own that the bench builds) on N BenchApps in
// namespace limit, the operator binary with its default flags on N BenchApps in
// namespace op. It measures both from the outside: a watch for convergence,
// kube-apiserver's /metrics for requests, /proc for memory. The report gives
// the cold figures' medians with their least and greatest; the later phases
// (at rest, restart, single changes, burst) follow the last cold run of
// each client, once. With -shards K (at least 2) each operator run is
// followed by one of K replicas of the operator as the shards of one ring
// (run --sharding), cold only, on a fresh plane, and the report
// benchmarks-sharded.{md,json} puts them beside the one replica and the
// limit of the same run:
//
//	go run . -n 10000 -runs 1 -shards 3 -out /tmp/bench-sharded
//
// With -controller each operator run is also followed by one of a
// hand-written controller for the BenchApp (cmd/controller, in the
// shape of client-go's sample-controller: informers, a work queue,
// listers; the limit's writes), cold only, on a fresh plane; the report
// sets it beside the operator and the limit:
//
//	go run . -n 1000 -controller -out /tmp/bench-controller
//
// With -files NAME the report's files are NAME.{md,json,png} (NAME is the
// kind's files or that, a dash and a name), and the JSON keeps NAME, so
// that -render writes them again; a run at N=30,000 (about an hour on two
// cores) writes beside the report of 1,000 and 10,000:
//
//	go run . -kind folder -n 30000 -runs 1 -controller -edits 20 -files benchmarks-30k -out ../../docs
//
// The folder's report has a section "How the cost grows with N": per
// object, the memory and CPU of each client at each N of every folder
// report in -out (benchmarks.json, benchmarks-*.json; for an N in two, the
// newer), and the slope between consecutive N, plotted in
// benchmarks-growth.png. A report written before its sibling does not
// know it: render it again (go run . -render ../../docs/benchmarks.json
// -out ../../docs) to see the other's N.
//
// With -conversion it measures the CRD conversion webhook instead (a LIST
// of N objects at the version the API server converts, through the
// operator's webhook and through conversion None; the writes that convert;
// the render; the operator's RSS) and writes benchmarks-conversion.{md,json}:
//
//	go run . -conversion -n 1000 -runs 5 -out /tmp/bench-conv
//
// It needs `make cluster-bin`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runBench(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
