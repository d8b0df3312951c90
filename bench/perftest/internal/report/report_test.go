package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	s := make([]uint32, 200)
	for i := range s {
		s[i] = uint32(i + 1) // 1..200
	}
	if got := percentile(s, 50); got != 100.5 {
		t.Errorf("median of 1..200 = %v, want 100.5", got)
	}
	if got := percentile(s, 99); got != 198 {
		t.Errorf("p99 of 1..200 = %v, want 198", got)
	}
	if got := percentile(s[:3], 50); got != 2 {
		t.Errorf("median of 1..3 = %v", got)
	}
	if got := percentile(s[:1], 99); got != 1 {
		t.Errorf("p99 of one sample = %v", got)
	}
}

func TestComputeStream(t *testing.T) {
	// 1000 operations of 1 MiB: 999 of 100 µs and one of 1.1 ms, and 0.2 ms
	// of final flush: 100.1 ms + 0.2 ms of wall time.
	rec := NewRecorder(1000)
	for i := 0; i < 999; i++ {
		rec.Add(100 * time.Microsecond)
	}
	rec.Add(1100 * time.Microsecond)
	r := Compute(Run{Test: "put_bw", Transport: "shm", Size: 1 << 20, Iterations: 1000, Elapsed: 101300 * time.Microsecond}, rec.Samples())
	want := Result{Test: "put_bw", Transport: "shm", Size: 1 << 20, Iterations: 1000,
		LatMedian: 100, LatP99: 100, LatAvg: 101, LatOverall: 101.3,
		RateAvg: 1e6 / 101, Rate: 1e6 / 101.3, BWAvg: 1e6 / 101, BW: 1e6 / 101.3}
	if !near(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	row := TableRow(r)
	if wantRow := "|  1048576 |         1000 | 100.000 | 100.000 | 101.000 |  101.300 |   9900.99 |   9871.67 |       9901 |       9872 |"; row != wantRow {
		t.Errorf("row\n got %q\nwant %q", row, wantRow)
	}
	var b bytes.Buffer
	w := &Writer{W: &b, Format: CSV}
	w.Write(r)
	w.Close()
	if want := csvHead + "\nput_bw,shm,1048576,1000,100.000,100.000,101.000,101.300,9900.99,9871.67,9901,9872\n"; b.String() != want {
		t.Errorf("csv\n got %q\nwant %q", b.String(), want)
	}
}

func TestComputePingPongAndEmpty(t *testing.T) {
	r := Compute(Run{Test: "am_lat", Size: 8, Iterations: 10, PingPong: true, Elapsed: 20 * time.Microsecond}, nil)
	if r.LatMedian != 1 || r.LatAvg != 1 || r.LatP99 != 1 || r.LatOverall != 1 || r.Rate != 1e6 || r.BW != 1e6*8.0/(1<<20) {
		t.Errorf("without samples: %+v", r)
	}
	r = Compute(Run{Test: "am_lat", Size: 8}, nil)
	var b bytes.Buffer
	(&Writer{W: &b, Format: JSON}).Write(r)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("zero run: %v: %s", err, b.String())
	}
	for _, k := range []string{"test", "transport", "size", "iterations", "lat_median_us", "lat_avg_us", "lat_p99_us", "bw_mbs", "msg_rate"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b.String())
		}
	}
	b.Reset()
	(&Writer{W: &b, Format: JSON}).Write(Result{LatAvg: math.NaN(), BW: math.Inf(1)})
	if !strings.Contains(b.String(), `"lat_avg_us":0`) || !strings.Contains(b.String(), `"bw_mbs":0`) {
		t.Errorf("non-finite values: %s", b.String())
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(10)
	if n := testing.AllocsPerRun(100, func() { r.Reset(); r.Add(time.Microsecond) }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
	r.Reset()
	r.Add(-5)
	r.Add(time.Hour)
	if s := r.Samples(); len(s) != 2 || s[0] != 0 || s[1] != math.MaxUint32 {
		t.Errorf("saturation: %v", s)
	}
	big := NewRecorder(3*MaxSamples + 5)
	if big.stride != 4 || cap(big.samples) > MaxSamples+1 {
		t.Errorf("stride %d cap %d", big.stride, cap(big.samples))
	}
	for i := 0; i < 9; i++ {
		big.Add(time.Duration(i))
	}
	if s := big.Samples(); len(s) != 3 || s[0] != 0 || s[1] != 4 || s[2] != 8 {
		t.Errorf("strided samples %v", s)
	}
}

func TestRecorderCountScale(t *testing.T) {
	r := NewRecorder(10)
	if n := testing.AllocsPerRun(100, func() { r.Reset(); r.AddCount(1000) }); n != 0 {
		t.Errorf("AddCount allocates %v times", n)
	}
	r.Reset()
	r.AddCount(0)
	r.AddCount(1000)
	r.AddCount(3_000_000_000)
	r.AddCount(1 << 40)
	r.Scale(1.5)
	want := []uint32{0, 1500, math.MaxUint32, math.MaxUint32}
	if s := r.Samples(); !slices.Equal(s, want) {
		t.Errorf("scaled counts %v, want %v", s, want)
	}
	r.Reset()
	r.AddCount(400)
	r.Scale(0.25)
	if s := r.Samples(); len(s) != 1 || s[0] != 100 {
		t.Errorf("scaled down %v, want [100]", s)
	}
}

func near(a, b Result) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return a.Test == b.Test && a.Transport == b.Transport && a.Size == b.Size && a.Iterations == b.Iterations &&
		eq(a.LatMedian, b.LatMedian) && eq(a.LatP99, b.LatP99) && eq(a.LatAvg, b.LatAvg) && eq(a.LatOverall, b.LatOverall) &&
		eq(a.RateAvg, b.RateAvg) && eq(a.Rate, b.Rate) && eq(a.BWAvg, b.BWAvg) && eq(a.BW, b.BW)
}

// Figures too wide for their column lose decimals, so the rules line up.
func TestTableRowWide(t *testing.T) {
	r := Result{Size: 1 << 20, Iterations: 20000, LatMedian: 145.43, LatP99: 16788.678, LatAvg: 123456.7, LatOverall: 99999999,
		BWAvg: 1003.65, BW: 1234567.891, RateAvg: 1004, Rate: 1003}
	row := TableRow(r)
	want := "|  1048576 |        20000 | 145.430 |16788.68 |123456.7 | 99999999 |   1003.65 |1234567.89 |       1004 |       1003 |"
	if row != want {
		t.Errorf("row\n got %q\nwant %q", row, want)
	}
	if len(row) != len(tableRule) {
		t.Errorf("row of %d characters, rule of %d", len(row), len(tableRule))
	}
}

func TestProgress(t *testing.T) {
	if got, want := Progress(8, 10, 100, 2000, true), "size 8: 10/100 iterations, 1.000 usec, 500000 msg/s"; got != want {
		t.Errorf("ping-pong: %q, want %q", got, want)
	}
	if got, want := Progress(4096, 5, 9, 250, false), "size 4096: 5/9 iterations, 0.250 usec, 4000000 msg/s"; got != want {
		t.Errorf("stream: %q, want %q", got, want)
	}
}

// The typical latency is ucx_perftest's: the lower median of the last
// TimingQueue iteration times, not the median of every sample.
func TestTypicalIsUCXTimingQueue(t *testing.T) {
	run := Run{Test: "put_lat", Size: 8, Iterations: 4000, PingPong: true, Elapsed: time.Millisecond}
	// 2000 iterations of 100 ns, then 2000 of 300 ns: the median of all
	// is 200 ns; of the last 2048 (48 of 100 ns, 2000 of 300 ns), 300 ns.
	rec := NewRecorder(run.Iterations)
	for i := range run.Iterations {
		rec.Add(time.Duration(100 + 200*(i/2000)))
	}
	if r := rec.Result(run); r.LatMedian != 0.150 {
		t.Errorf("typical of a slower second half: %v µs one-way, want 0.150 (300 ns round trip)", r.LatMedian)
	}
	if r := Compute(run, rec.Samples()); r.LatMedian != 0.150 {
		t.Errorf("Compute: typical %v µs, want 0.150", r.LatMedian)
	}
	// An even count takes the lower of the two middle times, as
	// ucx_perftest's index floor((n-1)/2) does: 1024 of 100 ns and 1024 of
	// 300 ns give 100 ns, not their mean.
	rec = NewRecorder(TimingQueue)
	for i := range TimingQueue {
		rec.Add(time.Duration(100 + 200*(i%2)))
	}
	run.Iterations = TimingQueue
	if r := rec.Result(run); r.LatMedian != 0.050 {
		t.Errorf("typical of an even count: %v µs one-way, want 0.050", r.LatMedian)
	}
	// The average still counts every sample.
	if r := rec.Result(run); r.LatAvg != 0.100 {
		t.Errorf("average %v µs, want 0.100", r.LatAvg)
	}
}

// A strided recorder keeps every one of the last TimingQueue iterations
// for the typical latency, and scales them with the samples.
func TestRecorderLastStrided(t *testing.T) {
	r := NewRecorder(2*MaxSamples + 1)
	if r.stride != 2 {
		t.Fatalf("stride %d", r.stride)
	}
	const n = 5000
	for i := range n {
		r.AddCount(uint64(i))
	}
	last := slices.Clone(r.Last())
	slices.Sort(last)
	if len(last) != TimingQueue || last[0] != n-TimingQueue || last[len(last)-1] != n-1 {
		t.Fatalf("last: %d times from %d to %d, want %d from %d to %d", len(last), last[0], last[len(last)-1], TimingQueue, n-TimingQueue, n-1)
	}
	r.Scale(2)
	if got := slices.Max(r.Last()); got != 2*(n-1) {
		t.Errorf("scaled last max %d, want %d", got, 2*(n-1))
	}
	if len(r.Samples()) != n/2 {
		t.Errorf("%d strided samples, want %d", len(r.Samples()), n/2)
	}
	r.Reset()
	r.AddCount(7)
	if l := r.Last(); len(l) != 1 || l[0] != 7 {
		t.Errorf("after Reset: %v", l)
	}
}

// Counts written into Direct's memory and committed are the samples
// AddCount would have kept, and the figures derived from them the same.
func TestRecorderDirect(t *testing.T) {
	counts := []uint64{5, 7, 1 << 40, 3, 9}
	byAdd := NewRecorder(len(counts))
	for _, c := range counts {
		byAdd.AddCount(c)
	}
	direct := NewRecorder(len(counts))
	mem := direct.Direct()
	if len(mem) < len(counts) {
		t.Fatalf("Direct has room for %d of %d iterations", len(mem), len(counts))
	}
	for i, c := range counts {
		mem[i] = uint32(min(c, math.MaxUint32))
	}
	direct.Commit(len(counts))
	if !slices.Equal(direct.Samples(), byAdd.Samples()) {
		t.Fatalf("direct samples %v, AddCount's %v", direct.Samples(), byAdd.Samples())
	}
	run := Run{Test: "put_bw", Size: 8, Iterations: len(counts), Elapsed: time.Microsecond}
	if a, b := direct.Result(run), byAdd.Result(run); a != b {
		t.Errorf("direct result %+v, AddCount's %+v", a, b)
	}
	direct.Commit(1 << 30)
	if direct.Len() != cap(direct.Direct()) {
		t.Errorf("Commit past the memory kept %d samples, want the capacity %d", direct.Len(), cap(direct.Direct()))
	}
	if (&Recorder{stride: 2}).Direct() != nil {
		t.Error("a strided recorder offers Direct memory")
	}
}
