//go:build !unix

package harness

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

func killGroup(*exec.Cmd) {}

func procStart(int) (uint64, bool) { return 0, false }

func killAgent(int, uint64) {}
