package bridge

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killGroup kills the process group pid leads (an agent runs in its own).
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// procStart is when process pid started, in clock ticks since boot (the
// 22nd field of /proc/PID/stat), or "" when there is no such process. With
// the pid it names one process, whatever pid reuse does later.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from after its closing one.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (the state): field 22 is f[19]. A zombie has exited.
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}
