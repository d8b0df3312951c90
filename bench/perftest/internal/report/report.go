package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// MaxSamples bounds the memory of a Recorder: runs with more iterations
// keep every k-th sample.
const MaxSamples = 1 << 24

// TimingQueue is the number of most recent iterations the typical latency
// is taken from: ucx_perftest's TIMING_QUEUE_SIZE, the length of the ring
// its libperf keeps the iteration times in (ucx_perf_update writes it,
// ucx_perf_calc_result takes the percentile of it).
const TimingQueue = 2048

// Recorder keeps per-iteration durations. Create it before the measured
// loop; Add does not allocate.
type Recorder struct {
	samples []uint32 // nanoseconds, saturated at 2^32-1
	stride  int
	skip    int
	// Strided recorders only: the last TimingQueue iterations, every one
	// of them, in a ring; n counts the iterations added.
	last *[TimingQueue]uint32
	n    int
}

// NewRecorder returns a recorder for iters iterations, its memory
// faulted in.
func NewRecorder(iters int) *Recorder {
	stride := 1
	for iters/stride > MaxSamples {
		stride++
	}
	samples := make([]uint32, iters/stride+1)
	// Write every page now: the memory of a large slice comes from the
	// kernel untouched, and the first write to each page would take a
	// page fault (tens of µs on a virtual machine) inside the measured
	// loop, once every 1024 iterations.
	for i := 0; i < len(samples); i += 1024 {
		samples[i] = 1
	}
	r := &Recorder{samples: samples[:0], stride: stride}
	if stride > 1 {
		r.last = new([TimingQueue]uint32)
		for i := 0; i < len(r.last); i += 1024 {
			r.last[i] = 1
		}
	}
	return r
}

// Reset forgets the samples and keeps the memory.
func (r *Recorder) Reset() { r.samples, r.skip, r.n = r.samples[:0], 0, 0 }

// Add records one iteration's duration.
func (r *Recorder) Add(d time.Duration) {
	ns := d.Nanoseconds()
	switch {
	case ns < 0:
		ns = 0
	case ns > math.MaxUint32:
		ns = math.MaxUint32
	}
	r.AddCount(uint64(ns))
}

// AddCount records one iteration's duration as a count of some clock's
// ticks (saturated at 2^32-1), as a timing loop does that converts
// nothing per iteration; Scale converts the samples afterwards. A
// recorder holds samples of one unit: all from Add or all from AddCount.
func (r *Recorder) AddCount(c uint64) {
	if c > math.MaxUint32 {
		c = math.MaxUint32
	}
	if r.stride > 1 {
		r.addStrided(uint32(c))
		return
	}
	if len(r.samples) == cap(r.samples) {
		return
	}
	r.samples = append(r.samples, uint32(c))
}

// addStrided keeps every stride-th iteration in samples and every
// iteration in the ring of the last TimingQueue.
func (r *Recorder) addStrided(c uint32) {
	r.last[r.n%TimingQueue] = c
	r.n++
	if r.skip > 0 {
		r.skip--
		return
	}
	r.skip = r.stride - 1
	if len(r.samples) < cap(r.samples) {
		r.samples = append(r.samples, c)
	}
}

// Scale multiplies every sample by f, saturating at 2^32-1: with f the
// nanoseconds per tick it turns samples recorded by AddCount into
// nanoseconds. A saturated sample stays saturated (2^32-1 ns): it stands
// for an iteration too long to count, not for its length.
func (r *Recorder) Scale(f float64) {
	scale(r.samples, f)
	if r.last != nil {
		scale(r.last[:min(r.n, TimingQueue)], f)
	}
}

func scale(s []uint32, f float64) {
	for i, v := range s {
		if v == math.MaxUint32 {
			continue
		}
		ns := math.Round(float64(v) * f)
		switch {
		case ns < 0 || math.IsNaN(ns):
			ns = 0
		case ns > math.MaxUint32:
			ns = math.MaxUint32
		}
		s[i] = uint32(ns)
	}
}

// Len is the number of samples kept.
func (r *Recorder) Len() int { return len(r.samples) }

// Samples returns the kept samples in nanoseconds, in iteration order
// (not a copy).
func (r *Recorder) Samples() []uint32 { return r.samples }

// Last returns the durations of the last TimingQueue iterations (all of
// them if fewer were recorded), every iteration even where Samples keeps
// every k-th, in no particular order (not a copy).
func (r *Recorder) Last() []uint32 {
	if r.last != nil {
		return r.last[:min(r.n, TimingQueue)]
	}
	return tail(r.samples)
}

// tail is the last TimingQueue of samples.
func tail(samples []uint32) []uint32 { return samples[max(0, len(samples)-TimingQueue):] }

// Result is the figures of one message size. Latencies are microseconds,
// bandwidths MB/s (2^20 bytes), message rates messages per second.
type Result struct {
	Test       string  `json:"test"`
	Transport  string  `json:"transport"`
	Size       int     `json:"size"`
	Iterations int     `json:"iterations"`
	LatMedian  float64 `json:"lat_median_us"`
	LatAvg     float64 `json:"lat_avg_us"`
	LatP99     float64 `json:"lat_p99_us"`
	LatOverall float64 `json:"lat_overall_us"`
	BWAvg      float64 `json:"bw_avg_mbs"`
	BW         float64 `json:"bw_mbs"` // overall
	RateAvg    float64 `json:"msg_rate_avg"`
	Rate       float64 `json:"msg_rate"` // overall
}

// Run describes what was measured.
type Run struct {
	Test, Transport string
	Size            int  // bytes per iteration
	Iterations      int  // measured iterations
	PingPong        bool // one iteration is a round trip: latency is halved
	// Elapsed is the wall time of the measured phase.
	Elapsed time.Duration
}

const mbyte = 1 << 20

// Compute derives the figures of run from its samples (nanoseconds per
// iteration, every iteration, in order): the typical latency from the
// last TimingQueue of them, the other sample-based figures from all. With
// no samples the sample-based figures come from Elapsed.
func Compute(run Run, samples []uint32) Result { return compute(run, samples, tail(samples)) }

// Result derives the figures of run from the recorder's samples: the
// typical latency from the last TimingQueue iterations (Last), the other
// sample-based figures from Samples.
func (r *Recorder) Result(run Run) Result { return compute(run, r.Samples(), r.Last()) }

func compute(run Run, samples, last []uint32) Result {
	r := Result{Test: run.Test, Transport: run.Transport, Size: run.Size, Iterations: run.Iterations}
	factor := 1.0
	if run.PingPong {
		factor = 2
	}
	overallNS := 0.0
	if run.Iterations > 0 {
		overallNS = float64(run.Elapsed.Nanoseconds()) / float64(run.Iterations)
	}
	avgNS, medNS, p99NS := overallNS, overallNS, overallNS
	if len(samples) > 0 {
		s := slices.Clone(samples)
		slices.Sort(s)
		sum := 0.0
		for _, v := range s {
			sum += float64(v)
		}
		avgNS = sum / float64(len(s))
		p99NS = percentile(s, 99)
	}
	if len(last) > 0 {
		medNS = typical(last)
	}
	r.LatMedian = medNS / factor / 1e3
	r.LatP99 = p99NS / factor / 1e3
	r.LatAvg = avgNS / factor / 1e3
	r.LatOverall = overallNS / factor / 1e3
	// A ping-pong iteration carries two messages: the rates (and the
	// bandwidths) are per one-way message, as ucx_perftest's.
	r.RateAvg = perSecond(avgNS / factor)
	r.Rate = perSecond(overallNS / factor)
	r.BWAvg = r.RateAvg * float64(run.Size) / mbyte
	r.BW = r.Rate * float64(run.Size) / mbyte
	return r
}

// typical is ucx_perftest's typical latency of the iteration times in
// last (its timing queue): with its default percentile rank of 50, the
// element of index floor((n-1)*50/100) of the n sorted times, the lower
// middle one where n is even.
func typical(last []uint32) float64 {
	s := slices.Clone(last)
	slices.Sort(s)
	return float64(s[(len(s)-1)/2])
}

func perSecond(ns float64) float64 {
	if ns <= 0 {
		return 0
	}
	return 1e9 / ns
}

// percentile of sorted s by the nearest-rank method; the median of an even
// count is the mean of the two middle values.
func percentile(s []uint32, p int) float64 {
	n := len(s)
	if p == 50 {
		if n%2 == 1 {
			return float64(s[n/2])
		}
		return (float64(s[n/2-1]) + float64(s[n/2])) / 2
	}
	rank := (p*n + 99) / 100 // ceil(p/100*n)
	if rank < 1 {
		rank = 1
	}
	return float64(s[rank-1])
}

// Format is an output format.
type Format int

const (
	Table Format = iota
	CSV
	JSON
)

var (
	cellWidths = []int{10, 14, 9, 9, 9, 10, 11, 11, 12, 12}
	tableRule  = rule(cellWidths)
	tableTop   = rule([]int{10, 14, 9*3 + 10 + 3, 11*2 + 1, 12*2 + 1})
	tableHead  = tableTop + "\n" +
		"|          |              |             latency (usec)             |   bandwidth (MB/s)    |  message rate (msg/s)   |\n" +
		tableRule + "\n" +
		"|     size | # iterations | typical |  99%ile | average |  overall |   average |   overall |    average |    overall |\n" +
		tableRule
)

const csvHead = "test,transport,size,iterations,lat_median_us,lat_p99_us,lat_avg_us,lat_overall_us,bw_avg_mbs,bw_mbs,msg_rate_avg,msg_rate"

func rule(widths []int) string {
	b := []byte{'+'}
	for _, w := range widths {
		for range w {
			b = append(b, '-')
		}
		b = append(b, '+')
	}
	return string(b)
}

// Writer prints results in one format; the table and CSV headers are
// printed before the first row.
type Writer struct {
	W      io.Writer
	Format Format
	// Title is printed above the table header (table format only).
	Title string
	head  bool
}

// Header prints the header now if it was not printed yet.
func (w *Writer) Header() error {
	if w.head {
		return nil
	}
	w.head = true
	var err error
	switch w.Format {
	case Table:
		if w.Title != "" {
			_, err = fmt.Fprintln(w.W, w.Title)
			if err != nil {
				return err
			}
		}
		_, err = fmt.Fprintln(w.W, tableHead)
	case CSV:
		_, err = fmt.Fprintln(w.W, csvHead)
	}
	return err
}

// Write prints one result.
func (w *Writer) Write(r Result) error {
	if err := w.Header(); err != nil {
		return err
	}
	var err error
	switch w.Format {
	case Table:
		_, err = fmt.Fprintln(w.W, TableRow(r))
	case CSV:
		_, err = fmt.Fprintf(w.W, "%s,%s,%d,%d,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.0f\n",
			r.Test, r.Transport, r.Size, r.Iterations, r.LatMedian, r.LatP99, r.LatAvg, r.LatOverall,
			r.BWAvg, r.BW, r.RateAvg, r.Rate)
	case JSON:
		var b []byte
		b, err = json.Marshal(finite(r))
		if err == nil {
			_, err = fmt.Fprintf(w.W, "%s\n", b)
		}
	}
	return err
}

// Close prints the table's closing rule.
func (w *Writer) Close() error {
	if w.Format == Table && w.head {
		_, err := fmt.Fprintln(w.W, tableRule)
		return err
	}
	return nil
}

// TableRow formats r as one row of the table. A figure too wide for its
// column loses decimals first.
func TableRow(r Result) string {
	return fmt.Sprintf("|%9d |%13d |%s |%s |%s |%s |%s |%s |%s |%s |",
		r.Size, r.Iterations, cell(r.LatMedian, 8, 3), cell(r.LatP99, 8, 3), cell(r.LatAvg, 8, 3), cell(r.LatOverall, 9, 3),
		cell(r.BWAvg, 10, 2), cell(r.BW, 10, 2), cell(r.RateAvg, 11, 0), cell(r.Rate, 11, 0))
}

// cell formats v in width characters with up to prec decimals, fewer if
// they do not fit.
func cell(v float64, width, prec int) string {
	for ; prec > 0; prec-- {
		if s := fmt.Sprintf("%*.*f", width, prec, v); len(s) <= width {
			return s
		}
	}
	return fmt.Sprintf("%*.0f", width, v)
}

// Progress formats the live progress line of a running measurement: ns is
// the average iteration since the previous line, shown as latency (halved
// for ping-pongs) and message rate.
func Progress(size, done, iters int, ns float64, pingPong bool) string {
	rate := perSecond(ns)
	if pingPong {
		ns /= 2
	}
	return fmt.Sprintf("size %d: %d/%d iterations, %.3f usec, %.0f msg/s", size, done, iters, ns/1e3, rate)
}

// finite replaces NaN and infinities (which JSON cannot carry) with 0.
func finite(r Result) Result {
	for _, p := range []*float64{&r.LatMedian, &r.LatAvg, &r.LatP99, &r.LatOverall, &r.BWAvg, &r.BW, &r.RateAvg, &r.Rate} {
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			*p = 0
		}
	}
	return r
}
