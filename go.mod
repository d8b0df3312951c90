module github.com/ucgo/ucgo

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	go.uber.org/multierr v1.11.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
)
