// Command resident runs a Go binary, lets it idle, and says which packages
// its resident file pages belong to: the pages of the binary's text,
// read-only data and function tables that the kernel holds for it
// (/proc/PID/pagemap's present and file bits over /proc/PID/maps), mapped
// to the symbols that lie in them and those to their packages. Its totals
// are the process's RssFile, the part of its RSS that is the binary
// (docs/performance.md, "What the binary costs at rest").
//
//	go build -o /tmp/operator ./cmd/operator
//	go run ./hack/resident -idle 5s -- /tmp/operator run --templates /tmp/empty
//	go run ./hack/resident -idle 2s -by module -- /tmp/floor
//
// The binary must keep its symbol table (no -ldflags=-s); -syms names an
// unstripped build of the same source to read symbols from when the binary
// run is stripped.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

func main() {
	idle := flag.Duration("idle", 5*time.Second, "how long the binary runs before its pages are read")
	top := flag.Int("top", 30, "rows of the table (0: all)")
	by := flag.String("by", "package", "row of the table: package or module")
	syms := flag.String("syms", "", "unstripped binary to read symbols from (default: the binary run)")
	logTo := flag.String("log", "", "file for the binary's stdout and stderr (default: discarded)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: resident [flags] -- binary [args...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || (*by != "package" && *by != "module") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Args(), *idle, *top, *by, *syms, *logTo); err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, argv []string, idle time.Duration, top int, by, syms, logTo string) error {
	bin, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if syms == "" {
		syms = bin
	}
	im, err := loadImage(syms)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, argv[1:]...)
	if logTo != "" {
		f, err := os.Create(logTo)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	select {
	case err := <-exited:
		return fmt.Errorf("%s exited before %s: %v", bin, idle, err)
	case <-time.After(idle):
	}
	snap, err := readProcess(cmd.Process.Pid)
	if err != nil {
		return err
	}
	t := tabulate(im, snap, by)
	t.write(w, top, argv)
	return nil
}
