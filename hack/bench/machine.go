package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
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
}

func describeMachine(kubernetes string) machine {
	m := machine{
		Cores:      runtime.NumCPU(),
		Kubernetes: kubernetes,
		Go:         runtime.Version(),
		Plane:      "etcd + kube-apiserver only (no controller-manager, scheduler or node), API Priority and Fairness on",
	}
	if kb, err := procField("/proc/meminfo", "MemTotal:"); err == nil {
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

// vmHWM is the peak resident memory of process pid in bytes. The kernel
// forgets it at exit: read it while the process runs.
func vmHWM(pid int) (int64, error) {
	kb, err := procField(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
	if err != nil {
		return 0, fmt.Errorf("peak RSS of pid %d: %w", pid, err)
	}
	return kb * 1024, nil
}

// rssSplit is what of process pid is resident now: anonymous memory (the
// heap, stacks, the runtime's) and file pages (the binary's text and data,
// shared and reclaimable, the same for one object as for 10,000).
func rssSplit(pid int) (anon, file int64, err error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	if anon, err = procField(path, "RssAnon:"); err != nil {
		return 0, 0, fmt.Errorf("resident memory of pid %d: %w", pid, err)
	}
	if file, err = procField(path, "RssFile:"); err != nil {
		return 0, 0, fmt.Errorf("resident memory of pid %d: %w", pid, err)
	}
	return anon * 1024, file * 1024, nil
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
			peak, peakErr = vmHWM(pid)
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

// cpuSeconds is the user and system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("CPU time of pid %d: short stat %q", pid, s)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("CPU time of pid %d: stat %q", pid, s)
	}
	return (utime + stime) / 100, nil
}

// procField reads a "Name:   123 kB" line of a /proc file, in kB.
func procField(path, name string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s line %q: %w", path, strings.TrimSpace(line), err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no %s line in %s", name, path)
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
