package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testSegment seals n chained demo records into a segment and returns its
// bytes.
func testSegment(t testing.TB, n int, key []byte) []byte {
	dir := t.TempDir()
	recs := demoRecordsChained(t, n)
	sw, err := newSegmentWriter(dir, 1, genesisHash)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := sw.add(r); err != nil {
			t.Fatal(err)
		}
	}
	path, err := sw.seal(dir, key, "fuzz", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != segmentName(1, int64(n)) {
		t.Fatalf("segment named %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseSegment: a segment file is read from a directory anyone with
// write access may have changed. The parser must never panic, and, with
// the key fixed, accept no bytes but the sealed ones: every other file is
// malformed, or breaks a hash or the sealing checkpoint's MAC.
func FuzzParseSegment(f *testing.F) {
	key := bytes.Repeat([]byte{9}, 32)
	seed := testSegment(f, 3, key)
	if _, err := ParseSegment("seed", seed, key); err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte(segmentMagic))
	f.Add(append([]byte(segmentMagic), make([]byte, 200)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSegment("fuzz", data, key)
		if err != nil {
			return
		}
		if !bytes.Equal(data, seed) {
			t.Fatalf("accepted %d bytes that are not the sealed segment: %+v", len(data), s)
		}
	})
}
