package fakeclaude

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// encode writes what json.Marshal writes, byte for byte, for every shape
// fakeclaude's messages take: nested obj, []obj, []any, nil slices, raw
// JSON, and strings that json escapes (HTML, U+2028, bad UTF-8).
func TestEncodeIsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "plain", "<b>&amp;</b>", "line\u2028sep\u2029", "bad\xffutf8", "quote\"back\\slash\n\t", "é ✓ 😀"}
	var value func(depth int) any
	value = func(depth int) any {
		n := 5
		if depth > 3 {
			n = 3
		}
		switch r.IntN(n + 4) {
		case 0:
			return strs[r.IntN(len(strs))]
		case 1:
			return r.IntN(1000) - 500
		case 2:
			return r.IntN(2) == 0
		case 3:
			return json.RawMessage(" { \"raw\" : [1, 2, \"<x>\"] } ")
		case 4:
			if r.IntN(3) == 0 {
				return obj(nil)
			}
			o := obj{}
			for range r.IntN(4) {
				o = append(o, kv{strs[r.IntN(len(strs))], value(depth + 1)})
			}
			return o
		case 5:
			if r.IntN(3) == 0 {
				return []obj(nil)
			}
			var a []obj
			for range r.IntN(3) {
				a = append(a, obj{{"k", value(depth + 1)}})
			}
			return a
		case 6:
			if r.IntN(3) == 0 {
				return []any(nil)
			}
			a := []any{}
			for range r.IntN(3) {
				a = append(a, value(depth+1))
			}
			return a
		case 7:
			return map[string]any{"m": value(depth + 1), "<": nil}
		default:
			return nil
		}
	}
	for i := range 5000 {
		v := obj{{"type", "x"}, {"v", value(0)}}
		want, err1 := json.Marshal(reference(v))
		got, err2 := encode(v)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(got, want) {
			t.Fatalf("case %d:\nencode       %s (%v)\njson.Marshal %s (%v)", i, got, err2, want, err1)
		}
	}
}

// refObj is obj encoded as fakeclaude did before encode: each field through
// json.Marshal, the whole validated and compacted by the level above.
type refObj []refKV

type refKV struct {
	k string
	v any
}

func (o refObj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// reference is v with every obj a refObj.
func reference(v any) any {
	switch v := v.(type) {
	case obj:
		if v == nil {
			return refObj(nil)
		}
		o := refObj{}
		for _, f := range v {
			o = append(o, refKV{f.k, reference(f.v)})
		}
		return o
	case []obj:
		if v == nil {
			return []refObj(nil)
		}
		a := []refObj{}
		for _, e := range v {
			a = append(a, reference(e).(refObj))
		}
		return a
	case []any:
		if v == nil {
			return []any(nil)
		}
		a := []any{}
		for _, e := range v {
			a = append(a, reference(e))
		}
		return a
	case map[string]any:
		m := map[string]any{}
		for k, e := range v {
			m[k] = reference(e)
		}
		return m
	}
	return v
}

// An error names the field it came from.
func TestEncodeError(t *testing.T) {
	_, err := encode(obj{{"outer", obj{{"inner", func() {}}}}})
	if err == nil || err.Error() != "field outer: field inner: json: unsupported type: func()" {
		t.Fatalf("err = %v", err)
	}
}
