package proc

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// DieWithParent has the kernel kill a process askctl started (a bridge, an
// exec surface) when askctl itself dies, however it dies: a run killed by
// a deadline or kill -9 leaves no bridge running, though each is in a
// process group of its own.
func DieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// Started is when process pid started (clock ticks after boot), which
// tells it from a later process given the same pid; ok is false when
// there is no such process.
func Started(pid int) (start uint64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command's name, in parentheses, may hold anything: the fields
	// are counted after its last ')'. starttime is the 22nd field, the
	// 20th after the name.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	_, err = fmt.Sscan(string(fields[19]), &start)
	return start, err == nil
}

// KillAgent kills the agent pid that started at start, with its process
// group when it leads one, if it is still that process.
func KillAgent(pid int, start uint64) {
	if now, ok := Started(pid); !ok || now != start {
		return // gone, or another process now
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
