//go:build !unix

package main

import "os/exec"

func ownGroup(*exec.Cmd) {}

func stopGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
