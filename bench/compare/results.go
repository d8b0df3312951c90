package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// row is one test, transport and size measured by both tools. A nil
// figure has its error beside it.
type row struct {
	Test       string   `json:"test"`
	Transport  string   `json:"transport"`
	Size       int      `json:"size"`
	Iterations int      `json:"iterations"`
	Warmup     int      `json:"warmup"`
	Ours       *figures `json:"ucgo,omitempty"`
	OursErr    string   `json:"ucgo_error,omitempty"`
	UCXTest    string   `json:"ucx_test"`
	UCXLayout  string   `json:"ucx_layout,omitempty"`
	UCX        *figures `json:"ucx,omitempty"`
	UCXErr     string   `json:"ucx_error,omitempty"`
	// With -r > 1, Ours and UCX are the medians of these runs.
	OursRuns []figures `json:"ucgo_runs,omitempty"`
	UCXRuns  []figures `json:"ucx_runs,omitempty"`
	// Pairs are the back-to-back runs in which both tools succeeded; the
	// table's ratios are the medians of theirs.
	Pairs []pair `json:"pairs,omitempty"`
	// StateChange says why the row's pairs straddle a change of the
	// host's state ("" when they do not).
	StateChange string `json:"state_change,omitempty"`
}

// results is everything one run of compare measured.
type results struct {
	UCXVersion string `json:"ucx_version"`
	Repeats    int    `json:"repeats"`
	// RealTime: both tools ran at SCHED_RR priority 1 (-rt).
	RealTime bool      `json:"realtime"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Rows     []row     `json:"rows"`
}

func (res *results) write(cfg *config, stdout io.Writer) error {
	var md bytes.Buffer
	res.markdown(&md)
	if _, err := stdout.Write(md.Bytes()); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	var cs bytes.Buffer
	if err := res.csv(&cs); err != nil {
		return err
	}
	files := map[string][]byte{"table.md": md.Bytes(), "results.json": append(js, '\n'), "results.csv": cs.Bytes()}
	for _, tr := range cfg.Transports {
		var svg bytes.Buffer
		if err := plot.Write(&svg, res.plot(tr)); err != nil {
			return err
		}
		files[tr.name+".svg"] = svg.Bytes()
	}
	for name, b := range files {
		if err := os.WriteFile(cfg.outputPath(name), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nwrote %s: table.md, results.json, results.csv and %s\n", cfg.Out, svgNames(cfg))
	return nil
}

func svgNames(cfg *config) string {
	var n []string
	for _, tr := range cfg.Transports {
		n = append(n, tr.name+".svg")
	}
	return strings.Join(n, ", ")
}

// markdown prints one table per transport: the typical (median) latency
// and the overall bandwidth of both tools and their ratios ucgo/UCX.
func (res *results) markdown(w io.Writer) {
	fmt.Fprintf(w, "ucgo vs %s; latency: typical µs (both tools: median of the last 2048 iterations), one-way for ping-pongs, per operation posted for\n", orUCX(res.UCXVersion))
	fmt.Fprintf(w, "bandwidth tests; bandwidth: MB/s (2^20 B), overall for bandwidth tests, size / typical latency for latency tests;\n")
	fmt.Fprintf(w, "medians of up to %d pairs of back-to-back runs; ratio: the median of the pairs' ratios ucgo/UCX (latency < 1 and\n", res.Repeats)
	fmt.Fprintf(w, "bandwidth > 1 mean ucgo is faster), each pair measured within one state of the host.\n")
	if res.RealTime {
		fmt.Fprintf(w, "Both tools ran at real-time priority (-rt: SCHED_RR 1).\n")
	} else {
		fmt.Fprintf(w, "Both tools ran at normal priority (without -rt).\n")
	}
	var trs []string
	for _, r := range res.Rows {
		if len(trs) == 0 || trs[len(trs)-1] != r.Transport {
			trs = append(trs, r.Transport)
		}
	}
	for _, trName := range trs {
		tr := findTransportMap(trName)
		fmt.Fprintf(w, "\n### %s (UCX: %s)\n\n", trName, tr.desc)
		fmt.Fprintln(w, "| test | size | iters | pairs | ucgo lat | UCX lat | lat ucgo/UCX | ucgo MB/s | UCX MB/s | BW ucgo/UCX |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		var notes, flagged []string
		seen := map[string]bool{}
		note := func(who, test, size, e string) {
			if e == "" {
				return
			}
			key := who + test + firstLine(e)
			if seen[key] {
				return
			}
			seen[key] = true
			notes = append(notes, fmt.Sprintf("- %s %s from %s: %s", who, test, size, firstLine(e)))
		}
		for _, r := range res.Rows {
			if r.Transport != trName {
				continue
			}
			test := r.Test
			if r.UCXLayout != "" && r.UCX != nil {
				test += " (UCX -D " + r.UCXLayout + ")"
			}
			o, u := r.Ours, r.UCX
			bw := bwFunc(findTestMap(r.Test), r.Size)
			latR, bwR := ratio(o, u, latOf), ratio(o, u, bw)
			if v, ok := r.pairedRatio(func(p pair) float64 { return p.LatRatio }); ok {
				latR = strconv.FormatFloat(v, 'f', 2, 64)
			}
			if v, ok := r.pairedRatio(func(p pair) float64 { return p.BWRatio }); ok {
				bwR = strconv.FormatFloat(v, 'f', 2, 64)
			}
			if r.StateChange != "" {
				latR, bwR = latR+" †", bwR+" †"
				flagged = append(flagged, fmt.Sprintf("- %s %s: %s", r.Test, sizeName(r.Size), r.StateChange))
			}
			fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", test, sizeName(r.Size), r.Iterations, len(r.Pairs),
				fig(o, latOf), fig(u, latOf), latR,
				fig(o, bw), fig(u, bw), bwR)
			note("ucgo", r.Test, sizeName(r.Size), r.OursErr)
			note("UCX", r.Test, sizeName(r.Size), r.UCXErr)
		}
		if len(flagged) > 0 {
			fmt.Fprintf(w, "\n† the host changed state during the row (UCX's own figure moved more than %.1fx between two pairs); run it again:\n%s\n", stateJump, strings.Join(flagged, "\n"))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "\nnot measured (first size it happened at):\n%s\n", strings.Join(notes, "\n"))
		}
	}
}

func orUCX(v string) string {
	if v == "" {
		return "UCX ucx_perftest"
	}
	return "UCX ucx_perftest (" + v + ")"
}

func latOf(f *figures) float64 { return f.LatMedian }
func bwOf(f *figures) float64  { return f.BW }

func fig(f *figures, get func(*figures) float64) string {
	if f == nil {
		return "–"
	}
	v := get(f)
	if v < 10 && v != 0 {
		return strconv.FormatFloat(v, 'g', 3, 64) // three significant digits
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func ratio(a, b *figures, get func(*figures) float64) string {
	if a == nil || b == nil || get(b) == 0 {
		return "–"
	}
	return strconv.FormatFloat(get(a)/get(b), 'f', 2, 64)
}

var csvHeader = []string{"test", "transport", "size", "tool", "ucx_layout", "iterations", "warmup",
	"lat_median_us", "lat_avg_us", "lat_overall_us", "bw_avg_mbs", "bw_mbs", "msg_rate_avg", "msg_rate", "error"}

// csv writes one line per row and tool.
func (res *results) csv(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range res.Rows {
		for _, side := range []struct {
			tool, layout string
			f            *figures
			err          string
		}{{"ucgo", "", r.Ours, r.OursErr}, {"ucx", r.UCXLayout, r.UCX, r.UCXErr}} {
			rec := []string{r.Test, r.Transport, strconv.Itoa(r.Size), side.tool, side.layout, strconv.Itoa(r.Iterations), strconv.Itoa(r.Warmup)}
			if f := side.f; f != nil {
				rec = append(rec, g(f.LatMedian), g(f.LatAvg), g(f.LatOverall), g(f.BWAvg), g(f.BW), g(f.RateAvg), g(f.Rate), "")
			} else {
				rec = append(rec, "", "", "", "", "", "", "", firstLine(side.err))
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// plot gathers the series of one transport: latency tests on the latency
// panel, bandwidth tests on the bandwidth panel, one series per test and
// tool.
func (res *results) plot(tr *transportMap) plot.Figure {
	fg := plot.Figure{
		Title: fmt.Sprintf("ucgo %s vs %s", tr.name, tr.desc),
		Panels: []plot.Panel{
			{Title: "latency (median, one-way)", YLabel: "latency (µs)"},
			{Title: "bandwidth (overall)", YLabel: "bandwidth (MB/s)"},
		},
	}
	idx := map[string]int{} // series key -> index in its panel
	for _, r := range res.Rows {
		if r.Transport != tr.name {
			continue
		}
		t := findTestMap(r.Test)
		p, get := &fg.Panels[1], bwOf
		if t != nil && t.lat {
			p, get = &fg.Panels[0], latOf
		}
		for _, side := range []struct {
			tool string
			f    *figures
		}{{"ucgo", r.Ours}, {"UCX", r.UCX}} {
			if side.f == nil || get(side.f) <= 0 {
				continue
			}
			key := r.Test + "/" + side.tool
			i, ok := idx[key]
			if !ok {
				i = len(p.Series)
				idx[key] = i
				p.Series = append(p.Series, plot.Series{Name: side.tool + " " + r.Test, Group: r.Test, Dashed: side.tool == "UCX"})
			}
			p.Series[i].Points = append(p.Series[i].Points, plot.XY{X: float64(r.Size), Y: get(side.f)})
		}
	}
	return fg
}
