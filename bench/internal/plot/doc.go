// Package plot draws the benchmark commands' figures as SVG without
// dependencies: panels side by side with log-scale axes (powers of two on
// x, decades on y), one colour per group of series, a reference tool's
// series dashed. bench/compare plots latency and bandwidth against message
// size with it, bench/scale costs against the number of peers.
package plot
