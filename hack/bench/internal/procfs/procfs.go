// Package procfs reads what the bench measures of a process from /proc:
// its peak and current resident memory and its CPU time. The bench reads
// the operator's; each client (the limit, the hand-written controller)
// reads its own, so it is linked into their binaries and stays small.
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// VmHWM is the peak resident memory of process pid in bytes. The kernel
// forgets it at exit: read it while the process runs.
func VmHWM(pid int) (int64, error) {
	kb, err := Field(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
	if err != nil {
		return 0, fmt.Errorf("peak RSS of pid %d: %w", pid, err)
	}
	return kb * 1024, nil
}

// RSSSplit is what of process pid is resident now: anonymous memory (the
// heap, stacks, the runtime's) and file pages (the binary's text and data,
// shared and reclaimable, the same for one object as for 10,000).
func RSSSplit(pid int) (anon, file int64, err error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	if anon, err = Field(path, "RssAnon:"); err != nil {
		return 0, 0, fmt.Errorf("resident memory of pid %d: %w", pid, err)
	}
	if file, err = Field(path, "RssFile:"); err != nil {
		return 0, 0, fmt.Errorf("resident memory of pid %d: %w", pid, err)
	}
	return anon * 1024, file * 1024, nil
}

// CPUSeconds is the user and system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func CPUSeconds(pid int) (float64, error) {
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

// Field reads a "Name:   123 kB" line of a /proc file, in kB.
func Field(path, name string) (int64, error) {
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
