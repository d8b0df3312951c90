package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

var errUsage = errors.New("usage: ucgo info [-d] [-c] [-e [-p ADDR|@FILE]]")

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ucgo:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "info" {
		return errUsage
	}
	fs := flag.NewFlagSet("ucgo info", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	devices := fs.Bool("d", false, "transports and devices")
	config := fs.Bool("c", false, "effective configuration")
	endpoint := fs.Bool("e", false, "open a worker and print its address (and lanes towards -p)")
	peer := fs.String("p", "", "peer worker address, hex or @file (with -e)")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *peer != "" && !*endpoint {
		return fmt.Errorf("%w: -p needs -e", errUsage)
	}
	if !*devices && !*config && !*endpoint {
		*devices, *config = true, true
	}
	if *devices {
		if err := printDevices(out); err != nil {
			return err
		}
	}
	if *config {
		if err := printConfig(out, os.Environ()); err != nil {
			return err
		}
	}
	if *endpoint {
		return printEndpoint(out, *peer)
	}
	return nil
}
