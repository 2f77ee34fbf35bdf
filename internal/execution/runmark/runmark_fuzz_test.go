package runmark

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// strictRun is an independent reading of what parse promises to accept:
// exactly one JSON object of a run (no unknown field), nothing after it
// but white space, naming id.
func strictRun(b []byte, id string) (audit.Run, bool) {
	if len(b) > maxMark {
		return audit.Run{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r audit.Run
	if dec.Decode(&r) != nil || r.ID != id {
		return audit.Run{}, false
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) != 0 {
		return audit.Run{}, false
	}
	return r, true
}

// FuzzParseMark checks how Recover reads a mark left on the disk, whose
// bytes are whatever the dead process (or anything writing the state
// directory) left: parse never panics, always yields the id the mark's
// name gives (the only id whose workspace Recover removes), and yields
// more than that id only for exactly one strict JSON object of a run
// naming that id — never for a second object, trailing bytes, an unknown
// field or an object naming another run. It would catch a mark whose
// content redirects the interrupted record (and the workspace removal) to
// another run, or half-parsed garbage recorded as a run's details.
func FuzzParseMark(f *testing.F) {
	const id = "run_22222222-2222-4222-8222-222222222222"
	good, err := json.Marshal(audit.Run{ID: id, Pipeline: "report_daily", ContextID: "ctx_1", SessionID: "s1",
		Principal: "alice", Role: "analyst", Transport: "stdio", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		f.Fatal(err)
	}
	seeds := [][]byte{
		good,
		good[:len(good)/2], // cut by a crash mid-write
		{},
		append(bytes.Clone(good), good...),
		append(bytes.Clone(good), "\n"...),
		[]byte(`{"ID":"run_33333333-3333-4333-8333-333333333333","Pipeline":"x"}`),
		[]byte(`{"ID":"` + id + `","Extra":1}`),
		[]byte(`{"ID":"` + id + `","id":"` + id + `"}`),
		[]byte(`null`),
		[]byte(`[{"ID":"` + id + `"}]`),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, id+suffix)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		got := parse(fh, id)
		if got.ID != id {
			t.Fatalf("parse(%q) names run %q, not the mark's %q", b, got.ID, id)
		}
		want, ok := strictRun(b, id)
		if !ok {
			want = audit.Run{ID: id}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(%q) = %+v, want %+v", b, got, want)
		}
	})
}

// FuzzMarkRoundTrip checks that what Begin writes for a run is what
// Recover records once its process is gone, whatever the run's fields hold
// (a pipeline, principal or session name of any bytes; JSON keeps text as
// valid UTF-8), and that Recover removes the run's workspace and mark. It
// would catch an interrupted run recorded without its pipeline or
// principal (the audit then says nothing of what was cut short), or a
// mark Begin writes that Recover cannot read.
func FuzzMarkRoundTrip(f *testing.F) {
	seeds := []struct {
		pipeline, principal, session, transport string
		micros                                  int64
	}{
		{"report_daily", "alice", "sess-1", "stdio", time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC).UnixMicro()},
		{"", "", "", "", 0},
		{"p\x00q", "bob\xff", "\"}", "streamable-http", -1},
		{"élan", "operator:carol", "s", "sse", 1 << 50},
	}
	for _, s := range seeds {
		f.Add(s.pipeline, s.principal, s.session, s.transport, s.micros)
	}
	const id = "run_44444444-4444-4444-8444-444444444444"
	f.Fuzz(func(t *testing.T, pipeline, principal, session, transport string, micros int64) {
		if len(pipeline)+len(principal)+len(session)+len(transport) > 2048 {
			t.Skip("names are bounded by the configuration")
		}
		at := time.UnixMicro(micros).UTC()
		if at.Year() < 0 || at.Year() > 9999 {
			t.Skip("a run starts within RFC 3339's years")
		}
		dir := t.TempDir()
		r := audit.Run{ID: id, Pipeline: pipeline, ContextID: "ctx_1", SessionID: session, Principal: principal,
			Role: "analyst", Transport: transport, StartedAt: at}
		h, err := Begin(dir, r)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(dir, id, "out"), 0o700); err != nil {
			t.Fatal(err)
		}
		abandon(h)
		// What a reader of the record gets back: JSON spells invalid UTF-8
		// as U+FFFD.
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var want audit.Run
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		var got []audit.Run
		n, err := Recover(dir, func(r audit.Run) error { got = append(got, r); return nil })
		if err != nil || n != 1 || len(got) != 1 {
			t.Fatalf("Recover = %d, %v (%d records)", n, err, len(got))
		}
		if !reflect.DeepEqual(got[0], want) || !got[0].StartedAt.Equal(at) {
			t.Fatalf("recorded %+v, Begin was given %+v", got[0], want)
		}
		if exists(filepath.Join(dir, id)) || exists(filepath.Join(dir, id+suffix)) {
			t.Fatal("workspace or mark left behind")
		}
	})
}
