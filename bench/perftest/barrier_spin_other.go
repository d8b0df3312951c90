//go:build !linux

package main

import "time"

// barrierSpin: see barrier_spin_linux.go; elsewhere the barrier blocks.
const barrierSpin = 20 * time.Millisecond

func (t *tcpOOB) spinReadable() {}
