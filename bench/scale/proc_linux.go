package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// usage is what /proc says of this process.
type usage struct {
	RSS      int64 // resident memory, bytes (VmRSS)
	Segments int   // mappings of memfd segments
	SegBytes int64 // their total size
	FDs      int   // open file descriptors
}

func readUsage() (usage, error) {
	var u usage
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return u, fmt.Errorf("VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return u, fmt.Errorf("VmRSS line %q: %w", line, err)
			}
			u.RSS = kb << 10
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return u, err
	}
	if u.Segments, u.SegBytes, err = memfdMappings(maps); err != nil {
		return u, err
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return u, err
	}
	u.FDs = len(fds)
	return u, nil
}

// memfdMappings counts the mappings of memfd files in a maps file and
// adds up their sizes.
func memfdMappings(maps []byte) (n int, size int64, err error) {
	s := bufio.NewScanner(bytes.NewReader(maps))
	for s.Scan() {
		line := s.Text()
		if !strings.Contains(line, "/memfd:") {
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(rng, "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || b < a {
			return 0, 0, fmt.Errorf("maps line %q", line)
		}
		n++
		size += int64(b - a)
	}
	return n, size, s.Err()
}
