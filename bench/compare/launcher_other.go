//go:build !linux

package main

import "os/exec"

// killGroupOnCancel leaves cmd as it is: -rt is for Linux, where
// checkRT's probe succeeds; elsewhere only the tool itself is killed.
func killGroupOnCancel(cmd *exec.Cmd) {}
