package shm

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/ucgo/ucgo/uct"
)

// procStartTime returns field 22 (starttime, clock ticks since boot) of
// /proc/PID/stat. A missing process gives an error wrapping
// uct.ErrUnreachable.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("shm: process %d: %w: %w", pid, uct.ErrUnreachable, err)
	}
	return parseStat(b)
}

func parseStat(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("shm: malformed /proc stat: %w", uct.ErrInvalidParam)
	}
	f := bytes.Fields(b[i+1:])
	// fields after comm start at field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("shm: short /proc stat: %w", uct.ErrInvalidParam)
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}
