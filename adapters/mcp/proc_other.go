//go:build !unix

package mcp

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}

// signalGroup ends the server process; without process groups, processes
// it started may outlive it.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
