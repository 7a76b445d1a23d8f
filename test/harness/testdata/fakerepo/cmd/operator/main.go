// Command operator stands in for the real operator in the harness's unit
// tests: BuildOperator builds it from this fake repository root, and the
// tests run it with StartOperator.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	lines := flag.Int("lines", 0, "numbered lines to print before ready")
	alloc := flag.Int("alloc", 0, "MiB to allocate and touch before ready")
	exit := flag.Int("exit", -1, "exit with this code right after ready (-1: wait for SIGTERM)")
	termDelay := flag.Duration("term-delay", 0, "time to take to shut down after SIGTERM")
	termExit := flag.Int("term-exit", 0, "exit code after SIGTERM")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM (only SIGKILL stops it)")
	spin := flag.Duration("spin", 0, "busy CPU time to burn before ready")
	flag.Parse()

	// Subscribe before announcing ready, so a test that signals on
	// "ready" never hits the default action.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	for i := 1; i <= *lines; i++ {
		fmt.Printf("line %d\n", i)
	}
	mem := make([]byte, *alloc<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1 // touch every page, so it counts in the RSS
	}
	for start := time.Now(); time.Since(start) < *spin; {
	}
	fmt.Println("ready")
	if *exit >= 0 {
		os.Exit(*exit)
	}
	for range term {
		if *ignoreTerm {
			fmt.Fprintln(os.Stderr, "ignoring SIGTERM")
			continue
		}
		fmt.Fprintln(os.Stderr, "stopping")
		time.Sleep(*termDelay)
		runtime.KeepAlive(mem)
		os.Exit(*termExit)
	}
}
