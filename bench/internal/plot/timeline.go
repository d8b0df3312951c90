package plot

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// Timeline is a count per time bin on linear axes, with marked instants
// (a fault injected, detected, traffic switched): bench/perftest's
// failover runs draw messages per 10 ms bin with it.
type Timeline struct {
	Title, YLabel string
	Bin           time.Duration // width of one bin
	Counts        []int         // per bin, from time 0
	Marks         []Mark
}

// Mark is a vertical line at At, labelled.
type Mark struct {
	At    time.Duration
	Label string
}

var markColours = []string{"#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"}

// WriteTimeline draws tl as SVG: one bar per bin, one dashed vertical
// line per mark with its label, the x axis in seconds.
func WriteTimeline(w io.Writer, tl Timeline) error {
	if tl.Bin <= 0 {
		return fmt.Errorf("plot: timeline bin %v", tl.Bin)
	}
	bw := bufio.NewWriter(w)
	width := 2 * panelW
	height := plotT + plotH + xAxisH + legendRH*float64(len(tl.Marks)) + 10
	left, right := plotL, width-plotR
	top, bottom := plotT, plotT+plotH
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%.1f" y="20" text-anchor="middle" font-size="15">%s</text>`+"\n", width/2, esc(tl.Title))
	fmt.Fprintf(bw, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, right-left, bottom-top)
	span := tl.Bin * time.Duration(max(1, len(tl.Counts)))
	for _, m := range tl.Marks {
		span = max(span, m.At)
	}
	peak := 1
	for _, c := range tl.Counts {
		peak = max(peak, c)
	}
	px := func(d time.Duration) float64 { return left + float64(d)/float64(span)*(right-left) }
	py := func(v float64) float64 { return bottom - v/float64(peak)*(bottom-top) }
	// x ticks: about ten, on whole tenths of seconds.
	step := max(100*time.Millisecond, (span / 10).Round(100*time.Millisecond))
	for t := time.Duration(0); t <= span; t += step {
		x := px(t)
		fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", x, bottom+16, t.Seconds())
	}
	for k := 0; k <= 4; k++ {
		v := float64(peak) * float64(k) / 4
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-6, py(v)+4, v)
	}
	fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" text-anchor="middle">time (s)</text>`+"\n", (left+right)/2, bottom+42)
	fmt.Fprintf(bw, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (top+bottom)/2, esc(tl.YLabel))
	bwid := px(tl.Bin) - px(0)
	for i, c := range tl.Counts {
		if c <= 0 {
			continue
		}
		x := px(tl.Bin * time.Duration(i))
		fmt.Fprintf(bw, `<rect class="bin" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#1f77b4"/>`+"\n", x, py(float64(c)), bwid, bottom-py(float64(c)))
	}
	for i, m := range tl.Marks {
		col := markColours[i%len(markColours)]
		x := px(m.At)
		fmt.Fprintf(bw, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>%s</title></line>`+"\n",
			x, top, x, bottom, col, esc(m.Label))
		ly := bottom + xAxisH + legendRH*float64(i) + 4
		fmt.Fprintf(bw, `<line class="legend" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n", left, ly, left+30, ly, col)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f">%s at %v</text>`+"\n", left+38, ly+4, esc(m.Label), m.At.Round(100*time.Microsecond))
	}
	fmt.Fprintln(bw, "</svg>")
	return bw.Flush()
}
