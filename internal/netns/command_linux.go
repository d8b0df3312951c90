package netns

import (
	"fmt"
	"os"
	"os/exec"
)

// CommandIn is [NS.Command] for the namespace at path (NS.Path), for a
// process that knows the namespace only by its path, such as a child
// told it in its environment.
func CommandIn(path, name string, args ...string) *exec.Cmd {
	self, err := os.Executable()
	cmd := exec.Command(self, append([]string{execFlag, path, name}, args...)...)
	if err != nil {
		cmd.Err = fmt.Errorf("netns: %w", err)
	}
	return cmd
}
