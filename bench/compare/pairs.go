package main

import (
	"fmt"
	"slices"
)

// pair is one back-to-back run of both tools at one test and size: the
// ratios ucgo/UCX of its figures, taken within one state of the host.
type pair struct {
	LatRatio float64 `json:"lat_ratio"` // median latency, ucgo/UCX
	BWRatio  float64 `json:"bw_ratio"`  // bandwidth (see bwFunc), ucgo/UCX
	// UCX is UCX's own figure of the pair, latency for latency tests and
	// bandwidth for bandwidth tests: the witness of the host's state.
	UCX float64 `json:"ucx"`
}

// stateJump is how far UCX's own figure may move between two pairs before
// the row is flagged: this host flips between a fast and a slow state
// about 2-4x apart, and UCX's run-to-run noise in one state stays well
// under 1.5x.
const stateJump = 1.5

func newPair(t *testMap, size int, ours, ucx figures) pair {
	bw := bwFunc(t, size)
	p := pair{LatRatio: div(ours.LatMedian, ucx.LatMedian), BWRatio: div(bw(&ours), bw(&ucx)), UCX: bw(&ucx)}
	if t.lat {
		p.UCX = ucx.LatMedian
	}
	return p
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// bwFunc is the bandwidth figure of a test: the overall bandwidth of a
// bandwidth test; for a latency test, size over the median latency, as
// the overall figure of a ping-pong carries every stall of a loaded
// machine and the median does not.
func bwFunc(t *testMap, size int) func(*figures) float64 {
	if t == nil || !t.lat {
		return bwOf
	}
	sz := float64(size)
	return func(f *figures) float64 {
		if f.LatMedian <= 0 {
			return 0
		}
		return sz / f.LatMedian * 1e6 / (1 << 20)
	}
}

// flagStateChange sets StateChange when UCX's own figure jumps by more than
// stateJump between two consecutive pairs: the host changed state during
// the row, and its pairs straddle the change.
func (r *row) flagStateChange(t *testMap) {
	r.StateChange = ""
	for i := 1; i < len(r.Pairs); i++ {
		a, b := r.Pairs[i-1].UCX, r.Pairs[i].UCX
		if a <= 0 || b <= 0 {
			continue
		}
		if max(a, b)/min(a, b) > stateJump {
			unit := "MB/s"
			if t != nil && t.lat {
				unit = "µs"
			}
			r.StateChange = fmt.Sprintf("UCX's figure went from %.3g to %.3g %s between pairs %d and %d", a, b, unit, i, i+1)
			return
		}
	}
}

// pairedRatio is the median of the pairs' ratios; ok is false without
// pairs.
func (r *row) pairedRatio(get func(pair) float64) (v float64, ok bool) {
	var vs []float64
	for _, p := range r.Pairs {
		if x := get(p); x > 0 {
			vs = append(vs, x)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// median of a non-empty slice, which it sorts.
func median(v []float64) float64 {
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}
