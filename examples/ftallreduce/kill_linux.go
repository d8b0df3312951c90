package main

import (
	"os"
	"syscall"
)

// suicide SIGKILLs this process: nothing after it runs, no deferred call,
// no exit handler, as when a node's kernel kills a rank.
func suicide() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
