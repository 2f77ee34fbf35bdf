package killswitch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteReadAndSwitch(t *testing.T) {
	dir := t.TempDir()
	sw := Open(dir)
	if st, err := sw.State(); err != nil || st.Engaged {
		t.Fatalf("no file: %+v %v, want released", st, err)
	}
	on := State{Engaged: true, By: "op", Reason: "incident", At: time.Now().UTC().Truncate(time.Second), ID: NewID()}
	if err := Write(dir, on); err != nil {
		t.Fatal(err)
	}
	if st, err := sw.State(); err != nil || st != on {
		t.Fatalf("after engage: %+v %v", st, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	off := State{By: "op", Reason: "over", At: on.At, ID: NewID()}
	if err := Write(dir, off); err != nil {
		t.Fatal(err)
	}
	// Same size and maybe the same mtime: the new inode still shows.
	if st, err := sw.State(); err != nil || st != off {
		t.Fatalf("after release: %+v %v", st, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// TestUnreadableIsEngaged: a corrupt, foreign or unreadable file fails
// closed — engaged, with ErrCorrupt or the read error.
func TestUnreadableIsEngaged(t *testing.T) {
	id := NewID()
	tests := []struct {
		name, content string
	}{
		{"not json", "engaged: false"},
		{"unknown field", `{"engaged":false,"by":"","reason":"","at":"2026-01-01T00:00:00Z","id":"` + id + `","x":1}`},
		{"duplicate key", `{"engaged":true,"engaged":false,"by":"","reason":"","at":"2026-01-01T00:00:00Z","id":"` + id + `"}`},
		{"trailing data", `{"engaged":false,"by":"","reason":"","at":"2026-01-01T00:00:00Z","id":"` + id + `"} {}`},
		{"bad id", `{"engaged":false,"by":"","reason":"","at":"2026-01-01T00:00:00Z","id":"XYZ"}`},
		{"empty", ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, FileName), []byte(tc.content), 0o600)
			st, err := Open(dir).State()
			if !st.Engaged || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%+v %v, want engaged with ErrCorrupt", st, err)
			}
		})
	}
	t.Run("a directory in its place", func(t *testing.T) {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, FileName), 0o700)
		if st, err := Open(dir).State(); !st.Engaged || err == nil {
			t.Fatalf("%+v %v, want engaged with an error", st, err)
		}
	})
}

// FuzzParse: any file content parses without panic, and what is accepted
// round-trips through Write's encoding unchanged.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"engaged":true,"by":"op","reason":"r","at":"2026-01-01T00:00:00Z","id":"00112233445566778899aabbccddeeff"}`))
	f.Add([]byte(`{"engaged":false}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		dir := t.TempDir()
		if err := Write(dir, st); err != nil {
			t.Fatalf("accepted state does not write: %+v %v", st, err)
		}
		back, err := Read(dir)
		if err != nil || !back.At.Equal(st.At) || back.Engaged != st.Engaged || back.ID != st.ID || back.By != st.By || back.Reason != st.Reason {
			t.Fatalf("round trip %+v -> %+v %v", st, back, err)
		}
	})
}

// BenchmarkState is the per-call cost of the kill switch file: one stat
// and a cache hit.
func BenchmarkState(b *testing.B) {
	dir := b.TempDir()
	if err := Write(dir, State{Engaged: false, By: "b", At: time.Now(), ID: NewID()}); err != nil {
		b.Fatal(err)
	}
	sw := Open(dir)
	for b.Loop() {
		if st, err := sw.State(); err != nil || st.Engaged {
			b.Fatal(st, err)
		}
	}
}
