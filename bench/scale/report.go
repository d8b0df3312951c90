package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// perPeer is the growth of the usage from a to b, per peer added.
func perPeer(a, b usage, peers int) (rssKiB, segKiB, segs, fds float64) {
	if peers <= 0 {
		return 0, 0, 0, 0
	}
	n := float64(peers)
	return float64(b.RSS-a.RSS) / 1024 / n, float64(b.SegBytes-a.SegBytes) / 1024 / n,
		float64(b.Segments-a.Segments) / n, float64(b.FDs-a.FDs) / n
}

func (res *results) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ucgo scaling over %s: one measuring process, peers in %d processes; clock %s\n", res.Transport, res.Procs, res.Clock)
	fmt.Fprintf(&b, "per peer: the growth since the previous step divided by the peers it added\n\n")
	fmt.Fprintln(&b, "| peers | connect ms | ms/peer | RSS MiB | RSS KiB/peer | segments | segment KiB/peer | fds | fds/peer | tag lat µs | p99 µs |")
	fmt.Fprintln(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	prev, prevN := res.Base, 0
	for _, s := range res.Steps {
		added := s.Peers - prevN
		rss, seg, _, fds := perPeer(prev, s.usage, added)
		fmt.Fprintf(&b, "| %d | %.1f | %.3f | %.1f | %.1f | %d | %.1f | %d | %.2f | %.3f | %.3f |\n",
			s.Peers, s.ConnectMs, s.ConnectMs/float64(added), float64(s.RSS)/(1<<20), rss, s.Segments, seg, s.FDs, fds, s.LatMedianUs, s.LatP99Us)
		prev, prevN = s.usage, s.Peers
	}
	if n := len(res.Steps); n > 1 {
		first, last := res.Steps[0], res.Steps[n-1]
		rss, seg, segs, fds := perPeer(first.usage, last.usage, last.Peers-first.Peers)
		fmt.Fprintf(&b, "\nfrom %d to %d peers, per peer: %.1f KiB resident, %.2f segments (%.1f KiB mapped), %.2f descriptors; connect %.3f ms per peer at %d, %.3f at %d; tag latency %.3f µs at %d, %.3f µs at %d\n\n",
			first.Peers, last.Peers, rss, segs, seg, fds,
			first.ConnectMs/float64(first.Peers), first.Peers, last.ConnectMs/float64(last.Peers-res.Steps[n-2].Peers), last.Peers,
			first.LatMedianUs, first.Peers, last.LatMedianUs, last.Peers)
	}
	return b.String()
}

// svg draws the four figures against the number of peers.
func (res *results) svg(w io.Writer) error {
	tick := func(x float64) string { return strconv.Itoa(int(x)) }
	panel := func(title, ylabel string, get func(s step, prev usage, prevN int) float64) plot.Panel {
		p := plot.Panel{Title: title, YLabel: ylabel, XLabel: "connected peers", XTick: tick}
		ser := plot.Series{Name: "ucgo " + res.Transport, Group: res.Transport}
		prev, prevN := res.Base, 0
		for _, s := range res.Steps {
			ser.Points = append(ser.Points, plot.XY{X: float64(s.Peers), Y: get(s, prev, prevN)})
			prev, prevN = s.usage, s.Peers
		}
		p.Series = []plot.Series{ser}
		return p
	}
	fg := plot.Figure{
		Title: "ucgo " + res.Transport + ": cost against connected peers",
		Panels: []plot.Panel{
			panel("connect time per peer", "ms", func(s step, _ usage, prevN int) float64 {
				return s.ConnectMs / float64(s.Peers-prevN)
			}),
			panel("resident memory", "MiB", func(s step, _ usage, _ int) float64 { return float64(s.RSS) / (1 << 20) }),
			panel("descriptors and segments", "count", func(s step, _ usage, _ int) float64 { return float64(s.FDs) }),
			panel("tag latency, 8 B, one way", "µs", func(s step, _ usage, _ int) float64 { return s.LatMedianUs }),
		},
	}
	return plot.Write(w, fg)
}
