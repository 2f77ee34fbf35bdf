package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// The stored form of a record (migration 6, issue 11: ≤ 400 B a record).
// It is not what is hashed — audit.Record.Canonical is — so it can change without
// touching a single hash, as long as it gives back the exact values:
//
//	seq        the row key (SQLite's rowid)
//	at         Unix microseconds
//	fields     varints: the audit_strings id of each of the numStrings
//	           string fields in stringFields order (0 is ""), then
//	           duration_micros and output_bytes (zig-zag), then truncated
//	           as one byte 0 or 1; nothing after
//	args extra the exact bytes
//	prev_hash  the 32 bytes of the SHA-256 (a stored hash that was not 64
//	hash       hex digits, by tampering, is kept as its own bytes)
//
// Strings repeat from record to record (session, context, principal, role,
// tool, rule, reason, instance...), so each is stored once in
// audit_strings. A row whose fields do not decode, or name a string that is
// not there, is "unreadable" to Verify, like a row with a bad time was.

// numStrings is how many string fields a record has.
const numStrings = 17

// stringFields returns r's string fields in fields order.
func stringFields(r *audit.Record) [numStrings]string {
	return [numStrings]string{r.SessionID, r.ContextID, r.Principal, r.Role,
		r.Transport, r.Tool, r.Capability, r.Tier, r.Phase, r.Decision,
		r.RuleID, r.Reason, string(r.Outcome), r.Violation, r.ErrorRef, r.Error,
		r.Instance}
}

// setStringFields sets r's string fields from v, in fields order.
func setStringFields(r *audit.Record, v *[numStrings]string) {
	r.SessionID, r.ContextID, r.Principal, r.Role = v[0], v[1], v[2], v[3]
	r.Transport, r.Tool, r.Capability, r.Tier, r.Phase, r.Decision = v[4], v[5], v[6], v[7], v[8], v[9]
	r.RuleID, r.Reason, r.Outcome, r.Violation, r.ErrorRef, r.Error = v[10], v[11], audit.Outcome(v[12]), v[13], v[14], v[15]
	r.Instance = v[16]
}

// errBadFields: a fields value that does not decode.
var errBadFields = errors.New("fields do not decode")

// packFields appends r's fields encoding, given its string ids.
func packFields(b []byte, ids *[numStrings]int64, r *audit.Record) []byte {
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
	}
	b = binary.AppendVarint(b, r.DurationMicros)
	b = binary.AppendVarint(b, r.OutputBytes)
	if r.Truncated {
		return append(b, 1)
	}
	return append(b, 0)
}

// fieldsLen returns the length of the fields encoding at the start of b,
// or -1 if b does not start with one.
func fieldsLen(b []byte) int {
	n := 0
	for range numStrings + 2 {
		_, k := binary.Uvarint(b[n:])
		if k <= 0 {
			return -1
		}
		n += k
	}
	if n >= len(b) {
		return -1
	}
	return n + 1
}

// unpackFields decodes a fields value into ids and r's numbers; it refuses
// anything but exactly one encoding's worth of bytes.
func unpackFields(b []byte, ids *[numStrings]int64, r *audit.Record) error {
	for i := range ids {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<62 {
			return errBadFields
		}
		ids[i], b = int64(v), b[n:]
	}
	for _, p := range [...]*int64{&r.DurationMicros, &r.OutputBytes} {
		v, n := binary.Varint(b)
		if n <= 0 {
			return errBadFields
		}
		*p, b = v, b[n:]
	}
	if len(b) != 1 || b[0] > 1 {
		return errBadFields
	}
	r.Truncated = b[0] == 1
	return nil
}

// hashBytes is the stored form of a hex hash: its 32 bytes, or, if it is
// not 64 hex digits (only a tampered v4 row's is), its own bytes.
func hashBytes(h string) []byte {
	if len(h) == 64 {
		if b, err := hex.DecodeString(h); err == nil {
			return b
		}
	}
	return []byte(h)
}

// hashText is the inverse of hashBytes.
func hashText(b []byte) string {
	if len(b) == 32 {
		return hex.EncodeToString(b)
	}
	return string(b)
}

// rawRow is one audit_records row as read, before its strings are looked
// up. Its slices are its own.
type rawRow struct {
	seq, at                             int64
	fields, args, extra, prevHash, hash []byte
	buf                                 []byte // backs the slices when packed
}

// scanRaw reads one row selected with recordColumns into r, reusing r's
// slices.
func scanRaw(rows *sql.Rows, r *rawRow) error {
	var f, a, e, p, h sql.RawBytes
	if err := rows.Scan(&r.seq, &r.at, &f, &a, &e, &p, &h); err != nil {
		return err
	}
	r.fields = append(r.fields[:0], f...)
	r.args = append(r.args[:0], a...)
	r.extra = append(r.extra[:0], e...)
	r.prevHash = append(r.prevHash[:0], p...)
	r.hash = append(r.hash[:0], h...)
	return nil
}

// decode turns raw into rec, looking strings up with str, all but the
// hashes (the caller sets them if it needs the text). rec's Args and Extra
// alias raw's slices.
func (raw *rawRow) decode(rec *audit.Record, str func(int64) (string, bool)) error {
	*rec = audit.Record{Seq: raw.seq}
	if raw.at < minTime.UnixMicro() || raw.at > maxTime.UnixMicro() {
		return fmt.Errorf("record %d: time %d outside years 1-9999", raw.seq, raw.at)
	}
	rec.Time = time.UnixMicro(raw.at).UTC()
	var ids [numStrings]int64
	if err := unpackFields(raw.fields, &ids, rec); err != nil {
		return fmt.Errorf("record %d: %w", raw.seq, err)
	}
	var strs [numStrings]string
	for i, id := range ids {
		if id == 0 {
			continue
		}
		s, ok := str(id)
		if !ok {
			return fmt.Errorf("record %d: string %d missing", raw.seq, id)
		}
		strs[i] = s
	}
	setStringFields(rec, &strs)
	if len(raw.args) > 0 {
		rec.Args = raw.args
	}
	if len(raw.extra) > 0 {
		rec.Extra = raw.extra
	}
	return nil
}

// strCache maps string ids to values for one handle's reads. An id names
// one value forever (rows are only ever added), so entries never go stale;
// Verify does not use it, reading every string in its own snapshot, so an
// edit of audit_strings cannot hide behind a cached value.
type strCache struct {
	mu sync.Mutex
	m  map[int64]string
}

// maxCachedStrings bounds either cache; past it, it starts over.
const maxCachedStrings = 1 << 18

// fill reads, through q, the strings raws name that the cache lacks, and
// returns the cache's map (to be read under c.mu).
func (c *strCache) fill(ctx context.Context, q querier, raws []rawRow) (map[int64]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > maxCachedStrings {
		c.m = make(map[int64]string)
	}
	var ids [numStrings]int64
	var scratch audit.Record
	for i := range raws {
		if unpackFields(raws[i].fields, &ids, &scratch) != nil {
			continue // decode reports it
		}
		for _, id := range ids {
			if _, ok := c.m[id]; ok || id == 0 {
				continue
			}
			var v []byte
			err := q.QueryRowContext(ctx, sqlStringValue, id).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				continue // decode reports it
			}
			if err != nil {
				return nil, err
			}
			c.m[id] = string(v)
		}
	}
	return c.m, nil
}

// decodeRows decodes a page of rows with the handle's string cache.
func (db *DB) decodeRows(ctx context.Context, raws []rawRow) ([]*audit.Record, error) {
	m, err := db.strs.fill(ctx, db.r, raws)
	if err != nil {
		return nil, err
	}
	db.strs.mu.Lock()
	defer db.strs.mu.Unlock()
	out := make([]*audit.Record, len(raws))
	for i := range raws {
		out[i] = new(audit.Record)
		if err := raws[i].decode(out[i], func(id int64) (string, bool) { s, ok := m[id]; return s, ok }); err != nil {
			return nil, err
		}
		out[i].PrevHash, out[i].Hash = hashText(raws[i].prevHash), hashText(raws[i].hash)
	}
	return out, nil
}

// strIDs maps values to their ids for the writer. Only committed ids enter
// it (see interner.commit), so a rolled-back insert leaves no dangling id.
type strIDs struct {
	mu sync.Mutex
	m  map[string]int64
}

// interner interns strings inside one write transaction.
type interner struct {
	ids   *strIDs
	d     *dialect
	t     wtx
	added map[string]int64
}

func (db *DB) interner(t wtx) *interner {
	return &interner{ids: &db.ids, d: db.d, t: t}
}

// id returns s's id, adding s to audit_strings if it is new.
func (in *interner) id(ctx context.Context, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if id, ok := in.added[s]; ok {
		return id, nil
	}
	in.ids.mu.Lock()
	id, ok := in.ids.m[s]
	in.ids.mu.Unlock()
	if ok {
		return id, nil
	}
	if err := in.t.later(ctx, laterStmt{what: "interning a string", query: in.d.internString, args: []any{[]byte(s)}, want: -1}); err != nil {
		return 0, err
	}
	if err := in.t.row(ctx, in.d.stringID, []byte(s)).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading a string's id: %w", err)
	}
	if in.added == nil {
		in.added = make(map[string]int64)
	}
	in.added[s] = id
	return id, nil
}

// commit makes the ids this transaction added known to later ones; call it
// only after the transaction committed.
func (in *interner) commit() {
	if len(in.added) == 0 {
		return
	}
	in.ids.mu.Lock()
	defer in.ids.mu.Unlock()
	if in.ids.m == nil || len(in.ids.m) > maxCachedStrings {
		in.ids.m = make(map[string]int64)
	}
	for s, id := range in.added {
		in.ids.m[s] = id
	}
}

// known reports whether every string of recs already has its id, so
// that interning them needs no statement.
func (in *interner) known(recs []*audit.Record) bool {
	in.ids.mu.Lock()
	defer in.ids.mu.Unlock()
	for _, r := range recs {
		for _, s := range stringFields(r) {
			if _, ok := in.added[s]; ok || s == "" {
				continue
			}
			if _, ok := in.ids.m[s]; !ok {
				return false
			}
		}
	}
	return true
}

// internAll interns the strings of recs (rowArgs then finds them added),
// in sorted order: on PostgreSQL two instances adding the same new strings
// wait for each other's row in audit_strings, and in one order that wait
// cannot become a cycle.
func (in *interner) internAll(ctx context.Context, recs []*audit.Record) error {
	var all []string
	for _, r := range recs {
		for _, s := range stringFields(r) {
			if _, ok := in.added[s]; !ok && s != "" {
				all = append(all, s)
			}
		}
	}
	slices.Sort(all)
	for _, s := range slices.Compact(all) {
		if _, err := in.id(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// rowArgs returns r's stored form in recordColumns order, interning its
// strings through in.
func (in *interner) rowArgs(ctx context.Context, r *audit.Record) ([]any, error) {
	var ids [numStrings]int64
	for i, s := range stringFields(r) {
		id, err := in.id(ctx, s)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	args, extra := []byte(r.Args), []byte(r.Extra)
	if args == nil {
		args = []byte{}
	}
	if extra == nil {
		extra = []byte{}
	}
	return []any{r.Seq, r.Time.UnixMicro(), packFields(nil, &ids, r), args, extra,
		hashBytes(r.PrevHash), hashBytes(r.Hash)}, nil
}
