// This file holds what differs between CLI releases. fakeclaude's code
// writes one release, the base (protocol.CLIVersion); every learned release
// is a file in releases/, written by `askctl claude learn`, that says what
// sets that release's messages and session file rows apart from the base:
// keys to drop and keys to add, per kind of message ([Kind]). Behaviour
// that keys cannot say is code, each piece a [Behaviour] named after what
// changed and gated by the first release that has it.
//
// A release's facts are written in one place: its file. The base's own
// file is empty. Only the release a process plays is read, so a new
// release costs nothing to the others.

package claudecli

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/askctl/askctl/protocol"
	"github.com/tidwall/gjson"
)

// Base is the release fakeclaude's code writes; the other releases are
// written as differences from it.
const Base = protocol.CLIVersion

// EnvCLIVersion chooses the release fakeclaude plays, and the release
// askctl's commands use when --cli is not given.
const EnvCLIVersion = "FAKECLAUDE_CLI_VERSION"

//go:embed releases/*.json
var releaseFiles embed.FS

// ReleaseDir is where the learned releases live in the source tree, for
// `askctl claude learn` to write to.
const ReleaseDir = "claudecli/releases"

// Release is one learned CLI release: what its messages and session file
// rows have that the base's do not, and the reverse.
type Release struct {
	// Version is the release, as `claude --version` says it.
	Version string `json:"version"`
	// AgentSDK is the TypeScript Agent SDK release published with it.
	AgentSDK string `json:"agent_sdk,omitempty"`
	// Learned says when and from what the data was learned.
	Learned string `json:"learned,omitempty"`
	// DefaultModel is the model the release reports with no --model,
	// when it is not the base's.
	DefaultModel string `json:"default_model,omitempty"`
	// Messages holds the differences per kind of message ([Kind]): a
	// stdout message's kind, or "session:" and a session file row's.
	Messages map[string]*Patch `json:"messages,omitempty"`
}

// Patch turns a message of the base into the release's.
type Patch struct {
	// Drop lists key paths the release does not write. A path is keys
	// joined by dots; "[]" after a key stands for each element of its
	// array (tool_result_meta[].permission_decision).
	Drop []string `json:"drop,omitempty"`
	// Add lists keys the release writes and the base does not.
	Add []Addition `json:"add,omitempty"`
}

// Addition is one key a release adds to a kind of message.
type Addition struct {
	// Key is its path, as in Patch.Drop; the last element is the new key.
	Key string `json:"key"`
	// After is the key it follows in the release's own order; "" puts it
	// first.
	After string `json:"after,omitempty"`
	// Value is the value the release writes, the same every time.
	Value json.RawMessage `json:"value,omitempty"`
	// Gen, instead of Value, names a value made fresh for each message:
	// GenUUID, GenNowMillis or GenTimestamp.
	Gen string `json:"gen,omitempty"`
}

// Values made fresh for each message.
const (
	GenUUID      = "uuid"      // a random UUID
	GenNowMillis = "now-ms"    // the Unix time in milliseconds
	GenTimestamp = "timestamp" // the time as the CLI writes it, RFC 3339 with milliseconds
)

// For is the patch of one kind of message, or nil.
func (r *Release) For(kind string) *Patch {
	if r == nil {
		return nil
	}
	return r.Messages[kind]
}

// Has reports whether the release has behaviour b.
func (r *Release) Has(b Behaviour) bool {
	return r != nil && b.In(r.Version)
}

// Behaviour is a difference between releases that data cannot express,
// named after what changed: the code that plays it asks Release.Has.
type Behaviour struct {
	Name  string // what changed, as a name
	Since string // the first release that has it
	What  string // what the release does since then, and did before
}

// In reports whether release version has b; "" is the newest release.
func (b Behaviour) In(version string) bool {
	return version == "" || CompareVersions(version, b.Since) >= 0
}

// StdinCloseCancels: when stdin closes while a permission request is
// pending, the CLI withdraws it (control_cancel_request), answers the tool
// with the interrupt deny and ends the turn with error_during_execution.
// Before, the tool failed with an AbortError and the turn went on: the
// model was called again and the turn ended in success.
var StdinCloseCancels = Behaviour{
	Name:  "stdin-close-cancels",
	Since: "2.1.328",
	What:  "stdin closing while a permission request is pending withdraws it (control_cancel_request), denies the tool as an interrupt and ends the turn with error_during_execution; before, the tool failed with \"" + protocol.PermissionStreamClosedText + "\" and the turn went on to a success result",
}

// Behaviours lists every gated behaviour, oldest first.
var Behaviours = []Behaviour{StdinCloseCancels}

// CompareVersions orders two releases "2.1.330" by their numbers: -1, 0
// or 1. A pre-release ("2.1.331-rc.1") comes before its release, and
// pre-releases of one release compare as text.
func CompareVersions(a, b string) int {
	a, apre, _ := strings.Cut(a, "-")
	b, bpre, _ := strings.Cut(b, "-")
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		if i >= len(as) {
			return -1
		}
		if i >= len(bs) {
			return 1
		}
		x, errx := strconv.Atoi(as[i])
		y, erry := strconv.Atoi(bs[i])
		if errx != nil || erry != nil {
			if c := strings.Compare(as[i], bs[i]); c != 0 {
				return c
			}
			continue
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case apre == bpre:
		return 0
	case apre == "":
		return 1
	case bpre == "":
		return -1
	}
	return strings.Compare(apre, bpre)
}

// Releases lists the learned releases, oldest first, from the names of
// their files (no file is read).
func Releases() []string { return releasesIn(releaseFiles) }

func releasesIn(fsys fs.FS) []string {
	var out []string
	eachRelease(fsys, func(v string) { out = append(out, v) })
	slices.SortFunc(out, CompareVersions)
	return out
}

// eachRelease calls fn with the version of each release file, in the
// order of the directory.
func eachRelease(fsys fs.FS, fn func(string)) {
	entries, _ := fs.ReadDir(fsys, "releases")
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			fn(v)
		}
	}
}

// ReleasesIn is Releases of the releases/ directory of fsys (a source
// tree's claudecli).
func ReleasesIn(fsys fs.FS) []string { return releasesIn(fsys) }

// NewestIn is the newest release of the releases/ directory of fsys
// (a source tree's claudecli), for askctl claude learn.
func NewestIn(fsys fs.FS) string { return newestIn(fsys) }

// NewestSource is newest.go for a newest release.
func NewestSource(version string) []byte {
	return []byte("// Code generated by askctl claude learn; DO NOT EDIT.\n\npackage claudecli\n\n// newestLearned is the newest release in releases/.\nconst newestLearned = " + strconv.Quote(version) + "\n")
}

// newestIn finds the newest release in one pass over the names.
func newestIn(fsys fs.FS) string {
	n := ""
	eachRelease(fsys, func(v string) {
		if n == "" || CompareVersions(v, n) > 0 {
			n = v
		}
	})
	if n == "" {
		return Base
	}
	return n
}

// Newest is the newest learned release: the one fakeclaude plays and
// askctl installs by default. It is a constant that askctl claude learn
// keeps (newest.go; a test checks it against the files), so that a
// process starts as fast with a hundred releases as with one.
func Newest() string { return newestLearned }

// Oldest is the oldest learned release.
func Oldest() string {
	rs := Releases()
	if len(rs) == 0 {
		return Base
	}
	return rs[0]
}

// UnknownRelease is the error for a release that was never learned.
type UnknownRelease struct {
	Version string
	Learned []string
}

func (e *UnknownRelease) Error() string {
	return fmt.Sprintf("claude %s is not a learned release (learned: %s); learn it with `askctl claude learn %s`, which installs it from npm, plays every built-in scenario with it and writes %s/%s.json",
		e.Version, strings.Join(e.Learned, ", "), e.Version, ReleaseDir, e.Version)
}

var loaded sync.Map // version → *Release

// Load reads a learned release; "" or "latest" is Newest, "oldest" Oldest. An unknown
// release is an *UnknownRelease. A path to a release file (one ending in
// .json) reads that file instead: `askctl claude learn` plays a release
// it is learning that way, before it is built in.
func Load(version string) (*Release, error) {
	switch version {
	case "", "latest":
		version = Newest()
	case "oldest":
		version = Oldest()
	}
	if strings.HasSuffix(version, ".json") {
		b, err := os.ReadFile(version)
		if err != nil {
			return nil, err
		}
		return ParseRelease(version, b)
	}
	if r, ok := loaded.Load(version); ok {
		return r.(*Release), nil
	}
	r, err := loadFrom(releaseFiles, version)
	if err != nil {
		return nil, err
	}
	loaded.Store(version, r)
	return r, nil
}

func loadFrom(fsys fs.FS, version string) (*Release, error) {
	name := "releases/" + version + ".json"
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, &UnknownRelease{Version: version, Learned: releasesIn(fsys)}
	}
	return ParseRelease(name, b)
}

// ParseRelease reads a release file; errors name the file and the field.
func ParseRelease(name string, b []byte) (*Release, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Release
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if r.Version == "" {
		return nil, fmt.Errorf("%s: no version", name)
	}
	for kind, p := range r.Messages {
		if p == nil {
			return nil, fmt.Errorf("%s: messages.%s: null", name, kind)
		}
		for i, a := range p.Add {
			switch {
			case a.Key == "":
				return nil, fmt.Errorf("%s: messages.%s.add[%d]: no key", name, kind, i)
			case (len(a.Value) == 0) == (a.Gen == ""):
				return nil, fmt.Errorf("%s: messages.%s.add[%d] (%s): want one of value and gen", name, kind, i, a.Key)
			case a.Gen != "" && a.Gen != GenUUID && a.Gen != GenNowMillis && a.Gen != GenTimestamp:
				return nil, fmt.Errorf("%s: messages.%s.add[%d] (%s): gen %q: want %s, %s or %s", name, kind, i, a.Key, a.Gen, GenUUID, GenNowMillis, GenTimestamp)
			case len(a.Value) > 0 && !json.Valid(a.Value):
				return nil, fmt.Errorf("%s: messages.%s.add[%d] (%s): value is not JSON", name, kind, i, a.Key)
			}
		}
	}
	return &r, nil
}

// Kind names what kind of message raw is, the key the release data is
// filed under: type and subtype ("system/init", "result/success"), the
// initialize response ("control_response/initialize"), and for user and
// assistant messages the type of their first content block ("user/text",
// "user/tool_result", "assistant/tool_use"); a session file's prompt row
// is "user/prompt". A session file row's kind is
// the same with "session:" in front (see SessionKind).
func Kind(raw []byte) string {
	v := gjson.GetManyBytes(raw, "type", "subtype", "request.subtype", "response.subtype", "response.response.claude_code_version",
		"message.content", "message.content.0.type", "operation", "turnPosition")
	typ := v[0].String()
	switch typ {
	case protocol.TypeControlRequest:
		return typ + "/" + v[2].String()
	case protocol.TypeControlResponse:
		if v[4].Exists() {
			return typ + "/" + protocol.SubtypeInitialize
		}
		return typ + "/" + v[3].String()
	case protocol.TypeUser, protocol.TypeAssistant:
		if v[8].Exists() {
			return typ + "/prompt" // a session file's row of a prompt, which starts a turn
		}
		if v[5].Type == gjson.String {
			return typ + "/text"
		}
		if t := v[6].String(); t != "" {
			return typ + "/" + t
		}
		return typ
	case "queue-operation":
		return typ + "/" + v[7].String()
	}
	if s := v[1].String(); s != "" {
		return typ + "/" + s
	}
	return typ
}

// SessionKind is Kind for a session file row.
func SessionKind(raw []byte) string { return "session:" + Kind(raw) }
