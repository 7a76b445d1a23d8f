// Command limit is the limit (hack/bench/internal/limit), the minimal
// client the bench measures the operator against, as a binary of its own:
// the bench builds and starts it, and its resident file pages are then its
// own code's, not the bench's (Helm, the plotting library, the conversion
// bench's schema validator).
//
//	limit -kubeconfig FILE -namespace limit -workers 10 -kind folder [-follow]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tmplop/operator/hack/bench/internal/limit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := limit.Run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
