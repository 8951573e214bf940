package claudecli

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/askctl/askctl/internal/uuid"
)

// The session files: the CLI keeps each session's conversation in
// <config dir>/projects/<cwd with every non-alphanumeric turned into
// "-">/<session id>.jsonl, a row per entry, appended as the session goes.
// fakeclaude writes them where the CLI does, and bridges read them.

// EnvConfigDir is the CLI's config directory (default ~/.claude).
const EnvConfigDir = "CLAUDE_CONFIG_DIR"

// ProjectDir is the directory the CLI keeps cwd's sessions in, under the
// config directory: every character that is not a letter or a digit
// becomes "-".
func ProjectDir(configDir, cwd string) string {
	var b strings.Builder
	for _, c := range cwd {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		case c > 0xFFFF:
			b.WriteString("--") // the CLI replaces each UTF-16 unit
		default:
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) > maxProjectName {
		// As the CLI: the first 200 characters and a hash of the path.
		name = name[:maxProjectName] + "-" + pathHash(cwd)
	}
	return filepath.Join(configDir, "projects", name)
}

// maxProjectName is the longest project directory name the CLI writes
// whole.
const maxProjectName = 200

// pathHash is the CLI's hash of a long path: the 32-bit string hash of its
// UTF-16 units (h = 31h + unit), made positive, in base 36.
func pathHash(path string) string {
	var h int32
	for _, u := range utf16.Encode([]rune(path)) {
		h = 31*h + int32(u)
	}
	return strconv.FormatInt(abs64(int64(h)), 36)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// ConfigDir is the CLI's config directory: CLAUDE_CONFIG_DIR, else
// home/.claude.
func ConfigDir(getenv func(string) string, home string) string {
	if getenv != nil {
		if d := getenv(EnvConfigDir); d != "" {
			return d
		}
	}
	return filepath.Join(home, ".claude")
}

// RealCwd is the working directory as the CLI sees it, symbolic links
// resolved (the logical $PWD is not what names the project directory).
func RealCwd() string {
	wd, _ := os.Getwd()
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		return r
	}
	return wd
}

// SessionFile is where the CLI keeps session id's conversation.
func SessionFile(configDir, cwd, id string) string {
	return filepath.Join(ProjectDir(configDir, cwd), id+".jsonl")
}

// LatestSession is the session id of the most recently written session file
// of cwd under configDir (what --continue resumes), or "".
func LatestSession(configDir, cwd string) string {
	files, _ := filepath.Glob(filepath.Join(ProjectDir(configDir, cwd), "*.jsonl"))
	type entry struct {
		id string
		t  time.Time
	}
	var es []entry
	for _, p := range files {
		if !uuid.Valid(strings.TrimSuffix(filepath.Base(p), ".jsonl")) {
			continue // not a session file
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			es = append(es, entry{strings.TrimSuffix(filepath.Base(p), ".jsonl"), st.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].t.After(es[j].t) })
	if len(es) == 0 {
		return ""
	}
	return es[0].id
}
