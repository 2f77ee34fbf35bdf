package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store"
)

// FuzzRecordHash: whatever bytes the fields hold (NULs, invalid UTF-8,
// JSON with odd spacing), a record either is refused as invalid or comes
// back from the file exactly as appended, re-hashes to its stored hash and
// leaves a chain that verifies.
func FuzzRecordHash(f *testing.F) {
	db, _ := openTemp(f, nil)
	fuzzRecordHash(f, db)
}

// fuzzRecordHash is FuzzRecordHash's body on any store: SQLite here,
// PostgreSQL in FuzzPostgresRecordHash.
func fuzzRecordHash(f *testing.F, db *store.DB) {
	f.Add("sess-1", "reason", `{"path":"a.csv"}`, `{}`, int64(12), int64(4096), true, int64(1_780_000_000_000_000))
	f.Add("", "", "", "", int64(0), int64(0), false, int64(0))
	f.Add("\x00\xff", "\u2028", " [1, 2] ", "null", int64(-1), int64(1<<62), false, int64(-62135596800000000))
	f.Add("a", "b", `{"a":`, "", int64(1), int64(1), false, int64(253402300800000000))
	f.Add("\xc3\x28", "a\x00b", `"\u0000"`, `{"k":"\xff"}`, int64(2), int64(3), true, int64(1_780_000_000_000_001))

	ctx := context.Background()
	var appended int64
	f.Fuzz(func(t *testing.T, s1, s2, args, extra string, d, o int64, trunc bool, micros int64) {
		rec := &audit.Record{
			Time: time.UnixMicro(micros), SessionID: s1, Reason: s2, Tool: s1 + s2,
			Args: json.RawMessage(args), Extra: json.RawMessage(extra), Outcome: audit.OutcomeOK,
			DurationMicros: d, OutputBytes: o, Truncated: trunc,
		}
		want := *rec
		err := db.Append(ctx, rec)
		validTime := !want.Time.Before(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)) && want.Time.Year() <= 9999
		valid := (args == "" || json.Valid([]byte(args))) && (extra == "" || json.Valid([]byte(extra))) && validTime
		if !valid {
			if !errors.Is(err, store.ErrInvalidRecord) {
				t.Fatalf("invalid record: err = %v, want ErrInvalidRecord", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		appended++
		got, err := db.Tail(ctx, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("Tail: %d, %v", len(got), err)
		}
		want.Time = want.Time.UTC().Truncate(time.Microsecond)
		if want.Time.IsZero() {
			want.Time = rec.Time // zero means "now"
		}
		want.Seq, want.PrevHash, want.Hash, want.Instance = rec.Seq, rec.PrevHash, rec.Hash, rec.Instance
		if d := sameRecord(&got[0], &want); d != "" {
			t.Fatalf("round trip: %s", d)
		}
		if got[0].ComputeHash() != got[0].Hash {
			t.Fatal("read-back record does not re-hash")
		}
		if appended < 50 || appended%50 == 0 {
			mustVerify(t, db, appended)
		}
	})
}

// FuzzVerifyEdit: an attacker sets any one column of any stored record to
// any value. Verify (which parses rows from a file it cannot trust) must
// not fail to run, and must flag the chain unless the edit left every
// record reading back exactly as before.
func FuzzVerifyEdit(f *testing.F) {
	f.Add(uint8(3), uint8(3), `{"path":"x"}`)
	f.Add(uint8(1), uint8(0), "7")
	f.Add(uint8(2), uint8(2), "\x01\x02")
	f.Add(uint8(4), uint8(5), "00100")
	f.Add(uint8(5), uint8(1), "1780833600007500")
	f.Add(uint8(0), uint8(7), "call 1")

	ctx := context.Background()
	tmplDB, tmpl := openTemp(f, nil)
	before := appendTail(f, tmplDB, 5)
	tmplDB.Close()
	// Every column of a record, as text and as bytes, and an interned
	// string (col 7: the value of string id seq%6+1).
	columns := []string{"seq", "at", "fields", "args", "extra", "prev_hash", "hash", ""}

	f.Fuzz(func(t *testing.T, seq, col uint8, val string) {
		path := copyStore(t, tmpl)
		raw := store.RawOpen(t, path)
		c := columns[int(col)%len(columns)]
		var v any = val
		if col/8%2 == 1 {
			v = []byte(val)
		}
		q := `UPDATE audit_records SET ` + c + ` = $1 WHERE seq = $2`
		if c == "" {
			q = `UPDATE audit_strings SET value = $1 WHERE id = $2`
		}
		if _, err := raw.Exec(q, v, int64(seq%6)+1); err != nil {
			return // e.g. a duplicate seq: the edit did not happen
		}
		raw.Close()
		db := openRO(t, path)
		res, err := db.Verify(ctx)
		if err != nil {
			t.Fatalf("Verify failed to run: %v", err)
		}
		after, readErr := db.Tail(ctx, 10)
		unchanged := readErr == nil && reflect.DeepEqual(after, before)
		if res.OK != unchanged {
			t.Fatalf("edit %s of seq %d to %q: Verify = %+v, records unchanged = %v", c, seq%6+1, val, res, unchanged)
		}
	})
}
