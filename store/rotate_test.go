package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

var testKey = bytes.Repeat([]byte{7}, 32)

// rotated builds a store of 60 records rotated twice (1..20, 21..40) and
// returns it with its segment directory.
func rotated(t *testing.T, db *store.DB) string {
	t.Helper()
	ctx := context.Background()
	appendN(t, db, 1, 60)
	dir := t.TempDir()
	for _, upTo := range []int64{20, 40} {
		rot, err := db.Rotate(ctx, store.RotateOptions{UpTo: upTo, Dir: dir, Key: testKey, Instance: "test", By: "operator"})
		if err != nil {
			t.Fatal(err)
		}
		if rot.Last != upTo {
			t.Fatalf("rotation = %+v", rot)
		}
	}
	return dir
}

// checkAll is what `audit verify --segments` checks: the store from its
// anchor, the anchor's signature, the segments and the seam.
func checkAll(t *testing.T, db *store.DB, dir string, key []byte) (store.VerifyResult, error) {
	t.Helper()
	res, err := db.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		return res, errors.New(res.Problem)
	}
	if err := store.CheckAnchor(res.Anchor, key); err != nil {
		return res, err
	}
	segs, err := store.ReadSegments(dir, key)
	if err != nil {
		return res, err
	}
	return res, store.CheckSeam(segs, res.Anchor)
}

// TestRotateKeepsChainVerifiable: after two rotations the store verifies
// on its own from its anchor, the anchor is signed, and segments plus store
// are one chain from record 1 (two rotation records appended).
func TestRotateKeepsChainVerifiable(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var db *store.DB
			if backend == "sqlite" {
				db, _ = openTemp(t, nil)
			} else {
				db = openPG(t, pgtest.DSN(t), nil)
			}
			dir := rotated(t, db)
			res, err := checkAll(t, db, dir, testKey)
			if err != nil || res.Records != 62 || res.Anchor.First != 41 {
				t.Fatalf("after rotation: %+v, %v", res, err)
			}
			if _, ok, _ := db.HashAt(context.Background(), 40); ok {
				t.Error("record 40 still in the store")
			}
			segs, err := store.ReadSegments(dir, testKey)
			if err != nil || len(segs) != 2 || segs[0].First != 1 || segs[1].Last != 40 {
				t.Fatalf("segments = %v, %v", segs, err)
			}
			// Nothing left to move below the anchor.
			if _, err := db.Rotate(context.Background(), store.RotateOptions{UpTo: 30, Dir: dir, Key: testKey}); !errors.Is(err, store.ErrNothingToRotate) {
				t.Fatalf("rotating below the anchor: %v", err)
			}
			appendN(t, db, 100, 5)
			if _, err := checkAll(t, db, dir, testKey); err != nil {
				t.Fatalf("after more appends: %v", err)
			}
		})
	}
}

// TestRotationTamper: what someone with write access to the segment
// directory or the database can do to a rotated chain, and where it shows.
func TestRotationTamper(t *testing.T) {
	segFile := func(dir string, i int) string {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+store.SegmentSuffix))
		return m[i]
	}
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir, dbPath string)
		want   string
	}{
		{"a record edited in a segment", func(t *testing.T, dir, _ string) {
			f := segFile(dir, 0)
			b, _ := os.ReadFile(f)
			i := bytes.Index(b, []byte("call 7"))
			b[i+5] = '8'
			os.WriteFile(f, b, 0o600)
		}, "record 7: hash does not match"},
		{"two records swapped in a segment", func(t *testing.T, dir, _ string) {
			f := segFile(dir, 1)
			b, _ := os.ReadFile(f)
			i, j := bytes.Index(b, []byte("call 30")), bytes.Index(b, []byte("call 31"))
			b[i+6], b[j+6] = '1', '0'
			os.WriteFile(f, b, 0o600)
		}, "record 30"},
		{"the middle segment removed", func(t *testing.T, dir, _ string) {
			os.Remove(segFile(dir, 0)) // 1..20: the rest starts at 21
		}, "records 1..20 are in no segment"},
		{"the newest segment removed", func(t *testing.T, dir, _ string) {
			os.Remove(segFile(dir, 1))
		}, "segments end at record 20 but the store starts at 41"},
		{"segments renamed to swap their order", func(t *testing.T, dir, _ string) {
			a, b := segFile(dir, 0), segFile(dir, 1)
			os.Rename(a, a+".tmp"+store.SegmentSuffix)
			os.Rename(b, a)
			os.Rename(a+".tmp"+store.SegmentSuffix, b)
		}, ""}, // content, not names, orders them: still one chain
		{"a segment truncated", func(t *testing.T, dir, _ string) {
			f := segFile(dir, 1)
			b, _ := os.ReadFile(f)
			os.WriteFile(f, b[:len(b)-300], 0o600)
		}, "truncated"},
		{"a segment resealed with another key", func(t *testing.T, dir, _ string) {
			f := segFile(dir, 1)
			b, _ := os.ReadFile(f)
			i := bytes.LastIndex(b, []byte(" mac="))
			copy(b[i+5:], bytes.Repeat([]byte("0"), 64))
			os.WriteFile(f, b, 0o600)
		}, "sealing checkpoint"},
		{"anchor forged after deleting the oldest stored records", func(t *testing.T, _, dbPath string) {
			raw := store.RawOpen(t, dbPath)
			if _, err := raw.Exec(`UPDATE audit_anchor SET first_seq = 46, prev_hash = (SELECT lower(hex(hash)) FROM audit_records WHERE seq = 45);
				DELETE FROM audit_records WHERE seq <= 45`); err != nil {
				t.Fatal(err)
			}
		}, "not signed by the witness key"},
		{"anchor row deleted", func(t *testing.T, _, dbPath string) {
			if _, err := store.RawOpen(t, dbPath).Exec(`DELETE FROM audit_anchor`); err != nil {
				t.Fatal(err)
			}
		}, "seq 1 missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, path := openTemp(t, nil)
			dir := rotated(t, db)
			if _, err := checkAll(t, db, dir, testKey); err != nil {
				t.Fatalf("before: %v", err)
			}
			tt.tamper(t, dir, path)
			_, err := checkAll(t, db, dir, testKey)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no finding", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a finding mentioning %q", err, tt.want)
			}
		})
	}
}

// TestAnchorNeedsTheKey: an anchor made without the witness key — the
// oldest records deleted and the anchor written to match, by someone with
// database access only — verifies as a chain but not as a rotation.
func TestAnchorNeedsTheKey(t *testing.T) {
	db, path := openTemp(t, nil)
	appendN(t, db, 1, 20)
	raw := store.RawOpen(t, path)
	if _, err := raw.Exec(`DELETE FROM audit_records WHERE seq <= 10;
		INSERT INTO audit_anchor (id, first_seq, prev_hash, mac) SELECT 1, 11, lower(hex(prev_hash)), 'forged' FROM audit_records WHERE seq = 11`); err != nil {
		t.Fatal(err)
	}
	res, err := db.Verify(context.Background())
	if err != nil || !res.OK {
		t.Fatalf("Verify = %+v, %v (the chain from the anchor is intact)", res, err)
	}
	if err := store.CheckAnchor(res.Anchor, testKey); !errors.Is(err, store.ErrBadAnchor) {
		t.Fatalf("CheckAnchor = %v, want ErrBadAnchor", err)
	}
}
