package report_test

import (
	"os"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// Four 8-byte ping-pong round trips of 1, 2, 3 and 10 µs measured in 16 µs
// of wall time, printed as a table and as a JSON line. The typical latency
// is ucx_perftest's: the lower middle of the sorted round trips (2 µs),
// halved for one way.
func Example() {
	rec := report.NewRecorder(4)
	for _, us := range []time.Duration{1, 2, 3, 10} {
		rec.Add(us * time.Microsecond)
	}
	res := rec.Result(report.Run{
		Test: "am_lat", Transport: "shm", Size: 8, Iterations: 4,
		PingPong: true, Elapsed: 16 * time.Microsecond,
	})
	tw := &report.Writer{W: os.Stdout, Format: report.Table}
	tw.Write(res)
	tw.Close()
	jw := &report.Writer{W: os.Stdout, Format: report.JSON}
	jw.Write(res)
	// Output:
	// +----------+--------------+----------------------------------------+-----------------------+-------------------------+
	// |          |              |             latency (usec)             |   bandwidth (MB/s)    |  message rate (msg/s)   |
	// +----------+--------------+---------+---------+---------+----------+-----------+-----------+------------+------------+
	// |     size | # iterations | typical |  99%ile | average |  overall |   average |   overall |    average |    overall |
	// +----------+--------------+---------+---------+---------+----------+-----------+-----------+------------+------------+
	// |        8 |            4 |   1.000 |   5.000 |   2.000 |    2.000 |      3.81 |      3.81 |     500000 |     500000 |
	// +----------+--------------+---------+---------+---------+----------+-----------+-----------+------------+------------+
	// {"test":"am_lat","transport":"shm","size":8,"iterations":4,"lat_median_us":1,"lat_avg_us":2,"lat_p99_us":5,"lat_overall_us":2,"bw_avg_mbs":3.814697265625,"bw_mbs":3.814697265625,"msg_rate_avg":500000,"msg_rate":500000}
}
