// Package plot draws the benchmark commands' figures as SVG without
// dependencies: panels side by side with log-scale axes (powers of two on
// x, decades on y), one colour per group of series, a reference tool's
// series dashed. bench/compare plots latency and bandwidth against message
// size with it, bench/scale costs against the number of peers.
// WriteTimeline draws a count per time bin on linear axes with marked
// instants (bench/perftest -e failover: messages per 10 ms across a
// fault).
package plot
