package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const pageSize = 4096

// mapping is one line of /proc/PID/maps that maps a file, with the pages
// of it the kernel holds for the process as file pages (not those a write
// copied into anonymous memory).
type mapping struct {
	start, end uint64
	perms      string
	path       string
	exe        bool     // the process's own binary
	resident   []uint64 // addresses of resident file pages
}

// snapshot is what the kernel says of a process at one moment.
type snapshot struct {
	status   map[string]uint64 // kB: VmRSS, VmHWM, RssAnon, RssFile
	mappings []mapping
}

func readProcess(pid int) (*snapshot, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer maps.Close()
	pagemap, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, fmt.Errorf("pagemap: %w", err)
	}
	defer pagemap.Close()
	snap := &snapshot{}
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		m, ok := parseMapsLine(sc.Text())
		if !ok {
			continue
		}
		m.exe = m.path == exe
		if m.resident, err = residentFilePages(pagemap, m.start, m.end); err != nil {
			return nil, fmt.Errorf("pagemap of %s: %w", m.path, err)
		}
		snap.mappings = append(snap.mappings, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if snap.status, err = readStatus(pid); err != nil {
		return nil, err
	}
	return snap, nil
}

// parseMapsLine reads "start-end perms offset dev inode path"; only lines
// that map a file (a path, not [heap] or [vdso]) are kept.
func parseMapsLine(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || !strings.HasPrefix(f[5], "/") || f[4] == "0" {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil {
		return mapping{}, false
	}
	return mapping{start: start, end: end, perms: f[1], path: strings.Join(f[5:], " ")}, true
}

// residentFilePages reads one 64-bit entry of pagemap per page
// (Documentation/admin-guide/mm/pagemap.rst): bit 63 is "present", bit 61
// "file page or shared anonymous". Both are readable without privilege;
// only the frame numbers are hidden.
func residentFilePages(pagemap *os.File, start, end uint64) ([]uint64, error) {
	n := (end - start) / pageSize
	buf := make([]byte, n*8)
	if _, err := pagemap.ReadAt(buf, int64(start/pageSize*8)); err != nil {
		return nil, err
	}
	var out []uint64
	for i := uint64(0); i < n; i++ {
		e := binary.LittleEndian.Uint64(buf[i*8:])
		if e&(1<<63) != 0 && e&(1<<61) != 0 {
			out = append(out, start+i*pageSize)
		}
	}
	return out, nil
}

func readStatus(pid int) (map[string]uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem":
			if n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out, nil
}
