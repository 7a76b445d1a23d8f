// Command controller is the hand-written controller for the BenchApp
// (hack/bench/internal/controller) as a binary of its own: the bench
// (-controller) builds and starts it, and its resident file pages are then
// its own code's, not the bench's (Helm, the plotting library, the
// conversion bench's schema validator).
//
//	controller -kubeconfig FILE -namespace limit -workers 10 -kind folder
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tmplop/operator/hack/bench/internal/controller"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := controller.Run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
