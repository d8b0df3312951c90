package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// figures are the numbers of one measured size, in ucx_perftest's units:
// latencies in microseconds (one-way for ping-pong tests), bandwidth in
// MB/s (2^20 bytes), message rate in messages per second.
type figures struct {
	Iterations int     `json:"iterations"`
	LatMedian  float64 `json:"lat_median_us"`
	LatAvg     float64 `json:"lat_avg_us"`
	LatOverall float64 `json:"lat_overall_us"`
	BWAvg      float64 `json:"bw_avg_mbs"`
	BW         float64 `json:"bw_mbs"` // overall
	RateAvg    float64 `json:"msg_rate_avg"`
	Rate       float64 `json:"msg_rate"` // overall
}

// errNoResult: ucx_perftest's output holds no final line.
var errNoResult = errors.New("ucx_perftest printed no result")

// ucxError is an error ucx_perftest reported ("UCX  ERROR ..." lines).
type ucxError struct{ Msgs []string }

func (e *ucxError) Error() string { return "ucx_perftest: " + strings.Join(e.Msgs, "; ") }

// unsupported says whether the error means the data layout or size is not
// supported by the transport, so another layout may work.
func (e *ucxError) unsupported() bool {
	for _, m := range e.Msgs {
		if strings.Contains(m, "does not support operation") || strings.Contains(m, "is larger than max supported") ||
			strings.Contains(m, "Unsupported operation") {
			return true
		}
	}
	return false
}

// ucxLogLine matches UCX's log lines:
// "[1795427212.426257] [vm:4836 :0]   libperf.c:519  UCX  ERROR tcp/lo does not ...".
var ucxLogLine = regexp.MustCompile(`^\[\d+\.\d+\]\s+\[[^\]]*\]\s+\S+\s+UCX\s+(ERROR|WARN)\s+(.*)$`)

// threadPrefix is the marker of ucx_perftest's intermediate lines.
var threadPrefix = regexp.MustCompile(`^\[thread \d+\]\s*`)

// parseUCX decodes the client output of ucx_perftest: the CSV of -v (with
// or without -f), the table of -f, or the full table with its progress
// lines, in which case the "Final:" line counts. Intermediate lines
// ("[thread N]") and UCX's log lines are skipped; if the output has UCX
// ERROR lines and no result, the error is a *ucxError.
func parseUCX(out []byte) (figures, error) {
	var (
		final   []float64
		haveFin bool
		errs    []string
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := ucxLogLine.FindStringSubmatch(line); m != nil {
			if m[1] == "ERROR" {
				errs = append(errs, strings.TrimSpace(m[2]))
			}
			continue
		}
		if threadPrefix.MatchString(line) {
			continue
		}
		isFinal := false
		if rest, ok := strings.CutPrefix(line, "Final:"); ok {
			line, isFinal = rest, true
		}
		v, ok := numbers(line)
		if !ok {
			continue
		}
		switch {
		case isFinal:
			final, haveFin = v, true
		case !haveFin:
			// -f and CSV print the final numbers as a bare line.
			final = v
		}
	}
	if err := sc.Err(); err != nil {
		return figures{}, fmt.Errorf("read ucx_perftest output: %w", err)
	}
	if final == nil {
		if len(errs) > 0 {
			return figures{}, &ucxError{Msgs: errs}
		}
		return figures{}, errNoResult
	}
	it := final[0]
	if it != math.Trunc(it) || it < 0 || it > math.MaxInt32 {
		return figures{}, fmt.Errorf("ucx_perftest: iteration count %v: %w", it, errNoResult)
	}
	return figures{
		Iterations: int(it),
		LatMedian:  final[1], LatAvg: final[2], LatOverall: final[3],
		BWAvg: final[4], BW: final[5],
		RateAvg: final[6], Rate: final[7],
	}, nil
}

// numbers parses a result line: eight non-negative numbers separated by
// commas (CSV) or blanks (table). ucx_perftest prints "inf" for an average
// whose samples it lost track of (seen on a loaded machine); such a figure
// becomes 0, unknown.
func numbers(line string) ([]float64, bool) {
	var f []string
	if strings.Contains(line, ",") {
		f = strings.Split(line, ",")
	} else {
		f = strings.Fields(line)
	}
	if len(f) != 8 {
		return nil, false
	}
	v := make([]float64, len(f))
	for i, s := range f {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(x) || x < 0 {
			return nil, false
		}
		if math.IsInf(x, 1) {
			if i == 0 {
				return nil, false
			}
			x = 0
		}
		v[i] = x
	}
	return v, true
}
