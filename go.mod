module github.com/ucgo/ucgo

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
