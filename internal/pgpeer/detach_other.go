//go:build !unix

package pgpeer

import "os/exec"

func detach(*exec.Cmd) {}
