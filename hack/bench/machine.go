package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/tmplop/operator/hack/bench/internal/procfs"
)

// machine describes where the numbers were measured.
type machine struct {
	Cores       int    `json:"cores"`
	MemoryBytes int64  `json:"memoryBytes"`
	CPU         string `json:"cpu,omitempty"`
	Kubernetes  string `json:"kubernetes"`
	Go          string `json:"go"`
	Plane       string `json:"plane"`
	// OperatorVersionRSSBytes is the peak RSS of `operator version`: the
	// binary's own share of any run's memory (its pages and the runtime's
	// start, before any work). OperatorBinaryBytes is the binary's size.
	OperatorVersionRSSBytes int64 `json:"operatorVersionRSSBytes,omitempty"`
	OperatorBinaryBytes     int64 `json:"operatorBinaryBytes,omitempty"`
	// LimitBinaryBytes and ControllerBinaryBytes are the sizes of the
	// clients' binaries (cmd/limit, cmd/controller), built as the
	// operator's.
	LimitBinaryBytes      int64 `json:"limitBinaryBytes,omitempty"`
	ControllerBinaryBytes int64 `json:"controllerBinaryBytes,omitempty"`
}

func describeMachine(kubernetes string) machine {
	m := machine{
		Cores:      runtime.NumCPU(),
		Kubernetes: kubernetes,
		Go:         runtime.Version(),
		Plane:      "etcd + kube-apiserver only (no controller-manager, scheduler or node), API Priority and Fairness on",
	}
	if kb, err := procfs.Field("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemoryBytes = kb * 1024
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// peakRSSAtExit runs bin with args to its end and returns its VmHWM as it
// exits. A child's ru_maxrss (what wait4 and /usr/bin/time report) would do
// but for Go starting children with vfork: the kernel counts the parent's
// memory in the child's at its exec. So the child is traced, stopped as it
// exits (PTRACE_O_TRACEEXIT) and read then.
func peakRSSAtExit(bin string, args ...string) (int64, error) {
	// ptrace requests come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("peak RSS of %s: %w", bin, err)
	}
	defer cmd.Process.Release() // reaped here, not by cmd.Wait
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	// It stops at its exec.
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return 0, fmt.Errorf("peak RSS of %s: %w", bin, err)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
		_ = cmd.Process.Kill()
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return 0, fmt.Errorf("peak RSS of %s: trace: %w", bin, err)
	}
	var peak int64
	var peakErr error
	sig := 0
	for {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return 0, fmt.Errorf("peak RSS of %s: continue: %w", bin, err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return 0, fmt.Errorf("peak RSS of %s: %w", bin, err)
		}
		if !ws.Stopped() {
			break
		}
		sig = 0
		switch {
		case ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			peak, peakErr = procfs.VmHWM(pid)
		case ws.StopSignal() != syscall.SIGTRAP:
			sig = int(ws.StopSignal()) // its own signals, passed on
		}
	}
	if ws.Signaled() {
		return 0, fmt.Errorf("peak RSS of %s %s: killed by %v", bin, strings.Join(args, " "), ws.Signal())
	}
	if ws.ExitStatus() != 0 {
		return 0, fmt.Errorf("peak RSS of %s %s: exit status %d", bin, strings.Join(args, " "), ws.ExitStatus())
	}
	return peak, peakErr
}

// loadAverage is the 1-minute load average: other work on the machine
// shows in the figures, and here.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
