//go:build unix

package pgpeer

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a session of its own: the server must not die
// with the test binary's process group on ^C before pg_ctl stop runs.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
