package replay

import (
	"strings"
	"testing"
)

// TestCompareSessions: session files compare by rows, keys and content, not
// by ids, times or paths; the CLI's own prompt and request rows are left out.
func TestCompareSessions(t *testing.T) {
	real := map[string][]byte{"-a/1.jsonl": []byte(strings.Join([]string{
		`{"type":"queue-operation","operation":"enqueue","timestamp":"t1","sessionId":"1","content":"Hi"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"Hi"},"uuid":"u1","cwd":"/a","sessionId":"1","promptId":"p"}`,
		`{"parentUuid":"u1","type":"attachment","attachment":{"type":"environment"},"uuid":"x"}`,
		`{"parentUuid":"x","type":"assistant","message":{"content":[{"type":"text","text":"Done."}]},"uuid":"u2","cwd":"/a","sessionId":"1"}`,
		`{"type":"last-prompt","lastPrompt":"Hi","leafUuid":"u2","sessionId":"1"}`,
		`{"type":"last-prompt","lastPrompt":"Hi","leafUuid":"u2","sessionId":"1"}`,
	}, "\n"))}
	same := map[string][]byte{"-b/2.jsonl": []byte(strings.Join([]string{
		`{"type":"queue-operation","operation":"enqueue","timestamp":"t9","sessionId":"2","content":"Hi"}`,
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"Hi"},"uuid":"v1","cwd":"/b","sessionId":"2","promptId":"q"}`,
		`{"parentUuid":"v1","type":"assistant","message":{"content":[{"type":"text","text":"Done."}]},"uuid":"v2","cwd":"/b","sessionId":"2"}`,
		`{"type":"last-prompt","lastPrompt":"Hi","leafUuid":"v2","sessionId":"2"}`,
	}, "\n"))}
	if d := CompareSessions(real, same); len(d) != 0 {
		t.Errorf("equal sessions differ: %v", d)
	}
	if _, _, n := SessionRows(real); n != 1 {
		t.Errorf("%d rows left out, want the attachment", n)
	}
	for name, fake := range map[string]string{
		"text":       strings.Replace(string(same["-b/2.jsonl"]), `"text":"Done."`, `"text":"Other."`, 1),
		"key":        strings.Replace(string(same["-b/2.jsonl"]), `,"promptId":"q"`, ``, 1),
		"row":        strings.Replace(string(same["-b/2.jsonl"]), `{"parentUuid":"v1","type":"assistant","message":{"content":[{"type":"text","text":"Done."}]},"uuid":"v2","cwd":"/b","sessionId":"2"}`+"\n", ``, 1),
		"chain":      strings.Replace(string(same["-b/2.jsonl"]), `{"parentUuid":"v1"`, `{"parentUuid":null`, 1),
		"chain link": strings.Replace(string(same["-b/2.jsonl"]), `{"parentUuid":"v1"`, `{"parentUuid":"v9"`, 1),
		"leaf":       strings.Replace(string(same["-b/2.jsonl"]), `"leafUuid":"v2"`, `"leafUuid":"v7"`, 1),
		"bookkeeper": strings.Replace(string(same["-b/2.jsonl"]), `"lastPrompt":"Hi"`, `"lastPrompt":"Ho"`, 1),
	} {
		if d := CompareSessions(real, map[string][]byte{"-b/2.jsonl": []byte(fake)}); len(d) == 0 {
			t.Errorf("%s: a changed session file compares equal", name)
		}
	}
	if d := CompareSessions(real, nil); len(d) == 0 {
		t.Errorf("no session file compares equal")
	}
}
