// Package report turns the per-iteration timings of a perftest run into
// ucx_perftest's figures and prints them as a table, CSV or JSON lines.
//
// A [Recorder] holds preallocated per-iteration samples (nanoseconds), so
// recording in the measured loop never allocates. [Compute] derives the
// figures of one message size:
//
//   - latency in microseconds: typical (ucx_perftest's: the lower median
//     of the last [TimingQueue] iteration times, the ring its libperf
//     keeps), p99 and average (the 99th percentile and the mean of every
//     sample) and overall (wall time of the whole measured phase,
//     including its final flush or acknowledgement, over the iterations).
//     Ping-pong tests divide by two: the figures are one-way.
//   - bandwidth in MB/s (MB = 2^20 bytes, as ucx_perftest) and message rate
//     in messages per second, each "average" (from the mean sample) and
//     "overall" (from the wall time). For ping-pong tests they count one-way
//     messages (one iteration is two), as ucx_perftest does.
//
// The package owns only numbers and text; the perftest command owns the
// transports and the clock.
package report
