package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// Provenance at the boundary (issue 22): what a runtime context was given by
// the principal's side and what it has handed to the agent, with labels, so
// that a need's arguments can be traced to where their values came from.
// It lives in the store so every process serving the context sees the same
// labels and they survive a restart (TestProvenanceSurvivesRestart, TestPostgresProvenance).
//
// Three tables, migration 7:
//
//   - provenance_inputs: the context's trusted inputs (the task text given
//     at `airlock context create --task-file`). Only the operator's API
//     writes them; no tool handler reaches this file's writers (the runner
//     is the only package that imports the store, and its only caller of
//     [DB.AddTrustedInput] is the operator's). Never evicted; bounded by
//     [MaxTrustedInputBytes] each and [MaxTrustedInputs] per context.
//   - provenance_content: one row per result handed to the agent (fetch,
//     upstream tool, pool read, pipeline output): source, integrity,
//     readers and the text as delivered. Bounded per context by the cap
//     the caller passes: over it, the oldest rows lose their text
//     (evicted = 1) but keep their label. A context that evicted untrusted
//     text can no longer prove a value did not come from it, so the tracer
//     treats what it cannot explain as untrusted from then on (evicted
//     content makes the answer more cautious, never less).
//   - endorsements: values an approver vouched for in one context.
//
// Strings that name things (ids, sources, kinds) must be UTF-8 without NUL
// (the PostgreSQL twin's TEXT); the texts are bytes (BLOB/BYTEA) and come
// back exactly.

// Integrity labels of provenance rows.
const (
	IntegrityTrusted   = "trusted"
	IntegrityUntrusted = "untrusted"
)

// Bounds of the principal's inputs.
const (
	// MaxTrustedInputBytes bounds one trusted input (a task text).
	MaxTrustedInputBytes = 256 << 10
	// MaxTrustedInputs bounds how many trusted inputs one context holds.
	MaxTrustedInputs = 64
	// MaxEndorsementBytes bounds one endorsed value.
	MaxEndorsementBytes = 4 << 10
	// MaxEndorsements bounds how many endorsements one context holds.
	MaxEndorsements = 1024
)

// ErrProvenanceInvalid: a provenance row that could not be stored exactly
// or breaks a bound (too large, too many, an unknown integrity).
var ErrProvenanceInvalid = errors.New("invalid provenance row")

// TrustedInput is one input the principal's side gave a context.
type TrustedInput struct {
	ContextID string
	ID        string   // unique in the context, e.g. "task"
	Kind      string   // e.g. "task"
	Readers   []string // who may see it; nil = public
	Text      string
	SHA256    string // hex of Text; set by AddTrustedInput
	AddedBy   string // e.g. "operator:alice"
	CreatedAt time.Time
}

// ContentLabel is one result handed to the agent in a context.
type ContentLabel struct {
	ContextID string
	Seq       int64  // per context, from 1; set by RecordContent
	Source    string // the attribution id, or pool:<pool>/<path>#<sha256>
	Kind      string // comm.fetch, comm.mcp, pool_file, pipeline_output, ...
	Integrity string // IntegrityTrusted or IntegrityUntrusted
	Readers   []string
	Text      string // "" once evicted
	SHA256    string // hex of the text as recorded; set by RecordContent
	Bytes     int64  // len of the text as recorded
	Evicted   bool
	CreatedAt time.Time
}

// Endorsement is one value an approver vouched for in one context.
type Endorsement struct {
	ContextID string
	ID        string
	Value     string
	By        string
	Reason    string
	CreatedAt time.Time
}

// Provenance is everything a context's tracer needs, read in one snapshot.
type Provenance struct {
	Inputs       []*TrustedInput
	Content      []*ContentLabel // oldest first; evicted rows have no Text
	Endorsements []*Endorsement
	// EvictedUntrusted: some untrusted content lost its text to the cap.
	EvictedUntrusted bool
}

const (
	sqlInsertTrustedInput = `INSERT INTO provenance_inputs (context_id, id, kind, readers, text, sha256, added_by, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (context_id, id) DO NOTHING`
	sqlCountTrustedInputs = `SELECT COUNT(*) FROM provenance_inputs WHERE context_id = $1`
	sqlTrustedInputs      = `SELECT id, kind, readers, text, sha256, added_by, created_at FROM provenance_inputs
	WHERE context_id = $1 ORDER BY created_at, id`

	sqlInsertEndorsement = `INSERT INTO endorsements (context_id, id, value, endorsed_by, reason, created_at)
	VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (context_id, id) DO NOTHING`
	sqlCountEndorsements = `SELECT COUNT(*) FROM endorsements WHERE context_id = $1`
	sqlEndorsements      = `SELECT id, value, endorsed_by, reason, created_at FROM endorsements
	WHERE context_id = $1 ORDER BY created_at, id`
)

// provenanceVersion is the migration that created the provenance tables.
const provenanceVersion = 7

func lockProvenance(contextID string) string { return "airlock:provenance:" + contextID }

// provenanceMigration is migration 7, in the words of ddl.go (listed at
// the end of the schema in migrations.go).
var provenanceMigration = migration{
	version: provenanceVersion,
	name:    "provenance: trusted inputs, labelled content, endorsements",
	steps: []step{
		table{name: "provenance_inputs", key: "context_id, id", cols: []column{
			{"context_id", sortedText, notNull},
			{"id", sortedText, notNull},
			{"kind", text, notNull},
			{"readers", text, notNull},
			{"text", blob, notNull},
			{"sha256", text, notNull},
			{"added_by", text, notNull},
			{"created_at", sortedText, notNull},
		}},
		// seq counts per context; evicted rows keep their label and lose
		// their text (see above).
		table{name: "provenance_content", key: "context_id, seq", cols: []column{
			{"context_id", sortedText, notNull},
			{"seq", bigint, notNull},
			{"source", text, notNull},
			{"kind", text, notNull},
			{"integrity", text, notNull},
			{"readers", text, notNull},
			{"sha256", text, notNull},
			{"bytes", bigint, notNull},
			{"text", blob, notNull},
			{"evicted", integer, notNull},
			{"created_at", sortedText, notNull},
		}},
		table{name: "endorsements", key: "context_id, id", cols: []column{
			{"context_id", sortedText, notNull},
			{"id", sortedText, notNull},
			{"value", text, notNull},
			{"endorsed_by", text, notNull},
			{"reason", text, notNull},
			{"created_at", sortedText, notNull},
		}},
	},
}

// AddTrustedInput stores one trusted input of a context; an input id
// already taken is ErrExists-like ([ErrProvenanceInvalid]), so a task is
// given once. Only the operator's side calls it.
func (db *DB) AddTrustedInput(ctx context.Context, in *TrustedInput) error {
	if err := db.writableCtx(ctx, "add trusted input"); err != nil {
		return err
	}
	if len(in.Text) > MaxTrustedInputBytes {
		return fmt.Errorf("store: trusted input %q: %d bytes, at most %d: %w", in.ID, len(in.Text), MaxTrustedInputBytes, ErrProvenanceInvalid)
	}
	if err := provText("trusted input", textField{"context", in.ContextID}, textField{"id", in.ID},
		textField{"kind", in.Kind}, textField{"added_by", in.AddedBy}); err != nil {
		return err
	}
	readers, err := encodeReaders(in.Readers)
	if err != nil {
		return err
	}
	in.SHA256 = hexSHA(in.Text)
	in.CreatedAt = storedTime(in.CreatedAt)
	return db.addCapped(ctx, "adding trusted input to context "+in.ContextID, in.ContextID,
		sqlCountTrustedInputs, MaxTrustedInputs, "trusted inputs", sqlInsertTrustedInput,
		[]any{in.ContextID, in.ID, in.Kind, readers, []byte(in.Text), in.SHA256, in.AddedBy, formatTime(in.CreatedAt)},
		fmt.Errorf("store: context %s already has trusted input %q: %w", in.ContextID, in.ID, ErrProvenanceInvalid))
}

// addCapped inserts one row of a context's provenance (a trusted input, an
// endorsement) under the context's lock: refused with
// [ErrProvenanceInvalid] when the context already holds max rows of the
// kind (counted by countSQL; the lock keeps two instances from both
// passing the count) and with taken when its id is.
func (db *DB) addCapped(ctx context.Context, what, contextID, countSQL string, max int64, kinds, insertSQL string, args []any, taken error) error {
	return db.inTx(ctx, what, txOpts{locks: []string{lockProvenance(contextID)}}, func(tx *sql.Tx) error {
		var n int64
		if err := tx.QueryRowContext(ctx, countSQL, contextID).Scan(&n); err != nil {
			return writeError(ctx, what, err)
		}
		if n >= max {
			return fmt.Errorf("store: context %s holds %d %s already: %w", contextID, n, kinds, ErrProvenanceInvalid)
		}
		return insertOnce(ctx, tx, what, insertSQL, args, taken)
	})
}

// RecordContent appends one label to its context and, in the same
// transaction, evicts the text of the oldest rows until the context's
// live text is at most maxBytes (a label larger than maxBytes keeps only
// its first maxBytes bytes, cut on a rune boundary). It sets l.Seq,
// l.SHA256 and l.Bytes and returns how many rows it evicted. A call's
// labels go with its audit record instead ([DB.AppendLabelled]).
func (db *DB) RecordContent(ctx context.Context, l *ContentLabel, maxBytes int64) (evicted int, err error) {
	if err := db.writableCtx(ctx, "record content"); err != nil {
		return 0, err
	}
	readers, err := checkLabel(l, maxBytes)
	if err != nil {
		return 0, err
	}
	ls := &Labels{List: []*ContentLabel{l}, MaxBytes: maxBytes, readers: []string{readers}}
	what := "recording content of context " + l.ContextID
	// The context's provenance_live row (FOR UPDATE on PostgreSQL) gives
	// two instances recording at once distinct seqs and one eviction each.
	err = db.inTx(ctx, what, txOpts{locks: []string{lockProvenance(l.ContextID)}}, func(tx *sql.Tx) error {
		if err := db.labelInTx(ctx, sqlTx{db, tx}, nil, []*Labels{ls}, nil, nil); err != nil {
			return writeError(ctx, what, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return ls.evicted[0], nil
}

// AddEndorsement stores one endorsed value of a context; an id already
// taken is refused with [ErrProvenanceInvalid].
func (db *DB) AddEndorsement(ctx context.Context, e *Endorsement) error {
	if err := db.writableCtx(ctx, "add endorsement"); err != nil {
		return err
	}
	if e.Value == "" || len(e.Value) > MaxEndorsementBytes {
		return fmt.Errorf("store: endorsement %q: value of %d bytes, want 1 to %d: %w", e.ID, len(e.Value), MaxEndorsementBytes, ErrProvenanceInvalid)
	}
	if err := provText("endorsement", textField{"context", e.ContextID}, textField{"id", e.ID},
		textField{"value", e.Value}, textField{"by", e.By}, textField{"reason", e.Reason}); err != nil {
		return err
	}
	e.CreatedAt = storedTime(e.CreatedAt)
	return db.addCapped(ctx, "adding endorsement to context "+e.ContextID, e.ContextID,
		sqlCountEndorsements, MaxEndorsements, "endorsements", sqlInsertEndorsement,
		[]any{e.ContextID, e.ID, e.Value, e.By, e.Reason, formatTime(e.CreatedAt)},
		fmt.Errorf("store: context %s already has endorsement %q: %w", e.ContextID, e.ID, ErrProvenanceInvalid))
}

// ContextProvenance reads a context's trusted inputs, labelled content and
// endorsements in one read transaction (one snapshot), through the read
// pool, reading only what changed since this handle's last read of the
// context (provcache.go). A file not yet migrated to provenance (a read-only handle) has
// none.
func (db *DB) ContextProvenance(ctx context.Context, contextID string) (*Provenance, error) {
	ps, err := db.ChainProvenance(ctx, []string{contextID})
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// ChainProvenance is ContextProvenance of each of ids (a context and its
// ancestors) in one read transaction: one snapshot for the whole chain,
// begun once per traced need instead of once per context (issue 23).
func (db *DB) ChainProvenance(ctx context.Context, ids []string) (_ []*Provenance, err error) {
	if err := db.readableCtx(ctx, "read provenance"); err != nil {
		return nil, err
	}
	out := make([]*Provenance, len(ids))
	if db.w == nil {
		var v int64
		if err := db.r.QueryRowContext(ctx, sqlSchemaVersion).Scan(&v); err != nil {
			return nil, fmt.Errorf("store: read provenance: %w", err)
		}
		if v < provenanceVersion {
			for i := range out {
				out[i] = &Provenance{}
			}
			return out, nil
		}
	}
	tx, err := db.snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: read provenance: %w", err)
	}
	defer tx.Rollback()
	for i, id := range ids {
		if out[i], err = db.readProvenance(ctx, tx, id); err != nil {
			return nil, fmt.Errorf("store: read provenance of %s: %w", id, err)
		}
	}
	return out, nil
}

func readInputs(ctx context.Context, tx *sql.Tx, contextID string) (out []*TrustedInput, err error) {
	err = scanRows(ctx, tx, sqlTrustedInputs, contextID, func(s scanner) error {
		in := &TrustedInput{ContextID: contextID}
		var readers, at string
		var text []byte
		if err := s.Scan(&in.ID, &in.Kind, &readers, &text, &in.SHA256, &in.AddedBy, &at); err != nil {
			return err
		}
		in.Text = string(text)
		out = append(out, in)
		return decodeProvRow(readers, at, &in.Readers, &in.CreatedAt)
	})
	return out, err
}

func scanContent(s scanner, contextID string) (*ContentLabel, error) {
	l := &ContentLabel{ContextID: contextID}
	var readers, at string
	var text []byte
	var evicted int64
	if err := s.Scan(&l.Seq, &l.Source, &l.Kind, &l.Integrity, &readers, &l.SHA256, &l.Bytes, &text, &evicted, &at); err != nil {
		return nil, err
	}
	l.Text, l.Evicted = string(text), evicted != 0
	return l, decodeProvRow(readers, at, &l.Readers, &l.CreatedAt)
}

func readEndorsements(ctx context.Context, tx *sql.Tx, contextID string) (out []*Endorsement, err error) {
	err = scanRows(ctx, tx, sqlEndorsements, contextID, func(s scanner) error {
		e := &Endorsement{ContextID: contextID}
		var at string
		if err := s.Scan(&e.ID, &e.Value, &e.By, &e.Reason, &at); err != nil {
			return err
		}
		var err error
		e.CreatedAt, err = parseTime(at)
		out = append(out, e)
		return err
	})
	return out, err
}

func decodeProvRow(readers, at string, rs *[]string, t *time.Time) error {
	var err error
	if *t, err = parseTime(at); err != nil {
		return err
	}
	if readers == "" {
		return nil
	}
	return json.Unmarshal([]byte(readers), rs)
}

// encodeReaders is "" for public (nil) and a JSON array otherwise, so an
// empty non-nil list (nobody) stays distinct from public.
func encodeReaders(rs []string) (string, error) {
	if rs == nil {
		return "", nil
	}
	for _, r := range rs {
		if f, reason := badText([]textField{{"reader", r}}); f != "" {
			return "", fmt.Errorf("store: reader %q %s: %w", r, reason, ErrProvenanceInvalid)
		}
	}
	return encodeJSON(rs)
}

func provText(what string, fields ...textField) error {
	if f, reason := badText(fields); f != "" {
		return fmt.Errorf("store: %s: %s %s: %w", what, f, reason, ErrProvenanceInvalid)
	}
	if fields[0].s == "" {
		return fmt.Errorf("store: %s: no context: %w", what, ErrProvenanceInvalid)
	}
	return nil
}

// hexSHA is the hex SHA-256 of s, hashed in place: a label's text is a
// whole page of content, and copying it to a []byte only to hash it was a
// page of garbage per call (issue 27; TestHexSHANoCopy).
func hexSHA(s string) string {
	h := sha256.New()
	var chunk [512]byte // on the stack: the string's bytes pass through it
	for len(s) > 0 {
		n := copy(chunk[:], s)
		_, _ = h.Write(chunk[:n]) // a hash never fails to write
		s = s[n:]
	}
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], h.Sum(sum[:0]))
	return string(out[:])
}

// CutSource bounds a source name for a label (an agent-chosen pool path
// may be long): at most 512 bytes, valid UTF-8, no NUL.
func CutSource(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	s, _ = textcut.Prefix(s, 512)
	return s
}
