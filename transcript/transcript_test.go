package transcript

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Write(Record{Dir: ToCLI, Msg: []byte(`{"type":"user"}`)})
		}()
	}
	wg.Wait()
	w.Write(Record{Event: EventExit, Code: Int(3)})
	recs, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 51 || recs[50].Code == nil || *recs[50].Code != 3 || recs[0].T.IsZero() {
		t.Errorf("read %d records, last %+v", len(recs), recs[len(recs)-1])
	}
}

func TestReadNamesTheLine(t *testing.T) {
	_, err := Read(strings.NewReader("{\"dir\":\"to_cli\"}\n\nnot json\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Errorf("Read error = %v, want one naming line 3", err)
	}
}
