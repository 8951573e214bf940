//go:build !unix

package proc

import "os/exec"

func SetGroup(*exec.Cmd) {}

func Terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

func KillGroup(*exec.Cmd) {}

func Started(int) (uint64, bool) { return 0, false }

func KillAgent(int, uint64) {}
