package store

import (
	"strconv"
	"strings"
)

// The store's queries live in this file, written once for both engines; the
// schema they run on is described once in migrations.go. The rules that
// keep them portable:
//
//   - Placeholders are $1, $2, ... which both engines accept.
//   - No SQLite-only functions. The hash chain is computed in Go over the
//     values as read back, never in SQL.
//   - Upserts use INSERT ... ON CONFLICT, which both engines support.
//   - Every table has an explicit primary key; nothing reads or relies on
//     SQLite's rowid beyond it (audit_records.seq and audit_strings.id are
//     the rowid, by design, see ddl.go).
//
// What an engine needs of its own is in dialect.go: the reads a write
// transaction locks on PostgreSQL (SELECT ... FOR UPDATE), the catalogue
// query, the interning of strings, the verify reads; the PRAGMAs are in
// db.go and checkpoint.go, and the transaction set-up in tx.go.

// sqlMigrationsTableExists is the one catalogue query; PostgreSQL asks
// information_schema.tables instead (pgMigrationsTableExists).
const sqlMigrationsTableExists = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`

// recordColumns is the column list of audit_records shared by the insert
// and the selects; its order is the order of [DB.rowArgs] and [scanRow].
const recordColumns = `seq, at, fields, args, extra, prev_hash, hash`

// recordArgs is how many values one row of recordColumns takes.
const recordArgs = 7

// A multi-row insert: the statement's text for n rows of a table, built
// once per chunk size (insertChunked uses 64, 16, 4 and 1 rows).
type multiInsert struct {
	head string // INSERT INTO t (cols) VALUES
	cols int
	text map[int]string
}

var chunkSizes = []int{64, 16, 4, 1}

func newMultiInsert(head string, cols int) *multiInsert {
	m := &multiInsert{head: head, cols: cols, text: map[int]string{}}
	for _, n := range chunkSizes {
		var b strings.Builder
		b.WriteString(head)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for j := range cols {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString("$" + strconv.Itoa(i*cols+j+1))
			}
			b.WriteByte(')')
		}
		m.text[n] = b.String()
	}
	return m
}

// The multi-row inserts of the audit commit: records and content labels.
var (
	insertRecords = newMultiInsert(`INSERT INTO audit_records (`+recordColumns+`) VALUES `, recordArgs)
	insertLabels  = newMultiInsert(`INSERT INTO provenance_content (context_id, seq, source, kind, integrity, readers, sha256, bytes, text, evicted, created_at) VALUES `, labelArgs)
)

// labelArgs is how many values one row of insertLabels takes.
const labelArgs = 11

const (
	sqlInsertRecord = `INSERT INTO audit_records (` + recordColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sqlReadHead     = `SELECT last_seq, last_hash FROM audit_head WHERE id = 1`
	sqlUpdateHead   = `UPDATE audit_head SET last_seq = $1, last_hash = $2 WHERE id = 1`
	// sqlUpdateHeadFrom moves the head on only from where the append
	// linked to ($3), so an append from a stale head changes nothing.
	sqlUpdateHeadFrom = `UPDATE audit_head SET last_seq = $1, last_hash = $2 WHERE id = 1 AND last_seq = $3`
	sqlLastSeq        = `SELECT last_seq FROM audit_head WHERE id = 1`
	sqlScanAfter      = `SELECT ` + recordColumns + ` FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT $2`
	sqlTail           = `SELECT ` + recordColumns + ` FROM audit_records ORDER BY seq DESC LIMIT $1`
	sqlVerifyAll      = `SELECT ` + recordColumns + ` FROM audit_records ORDER BY seq` // every row, a seq ≤ 0 slipped in too
	sqlVerifyAfter    = `SELECT ` + recordColumns + ` FROM audit_records WHERE seq > $1 ORDER BY seq`
	sqlHashAt         = `SELECT hash FROM audit_records WHERE seq = $1`

	// SQLite's Verify reads each row as one value (see verifier.go): the
	// driver's cost is per column, and it is most of a full verify. The
	// byte columns are concatenated with || (bytes kept, as TEXT, cast
	// back to BLOB), prev_hash and hash first, then fields (which knows
	// its own length), args (whose length comes along) and extra.
	sqlitePackedRow = `seq, at,
		CASE WHEN octet_length(prev_hash) = 32 AND octet_length(hash) = 32 THEN octet_length(args) ELSE -1 END,
		CAST(prev_hash || hash || fields || args || extra AS BLOB) FROM audit_records`
	sqliteVerifyAll = `SELECT ` + sqlitePackedRow + ` ORDER BY seq`
	// The first of the two chunks a large verify reads at once
	// (verify.go): every row up to $1 (a seq ≤ 0 slipped in too), or
	// those after $1 up to $2.
	sqliteVerifyUpTo  = `SELECT ` + sqlitePackedRow + ` WHERE seq <= $1 ORDER BY seq`
	sqliteVerifyRange = `SELECT ` + sqlitePackedRow + ` WHERE seq > $1 AND seq <= $2 ORDER BY seq`
	sqliteVerifyAfter = `SELECT ` + sqlitePackedRow + ` WHERE seq > $1 ORDER BY seq`

	sqlReadAnchor   = `SELECT first_seq, prev_hash, mac FROM audit_anchor WHERE id = 1`
	sqlUpsertAnchor = `INSERT INTO audit_anchor (id, first_seq, prev_hash, mac) VALUES (1, $1, $2, $3)
	ON CONFLICT (id) DO UPDATE SET first_seq = excluded.first_seq, prev_hash = excluded.prev_hash, mac = excluded.mac`
	sqlDeleteUpTo = `DELETE FROM audit_records WHERE seq <= $1`
	sqlLastBefore = `SELECT MAX(seq) FROM audit_records WHERE at < $1`

	// The interned strings. An insert that finds the value taken does
	// nothing; the id is then read back (by another process's commit, or
	// an earlier one's).
	sqlInternString = `INSERT INTO audit_strings (value) VALUES ($1) ON CONFLICT (value) DO NOTHING`
	sqlStringID     = `SELECT id FROM audit_strings WHERE value = $1`
	sqlStringValue  = `SELECT value FROM audit_strings WHERE id = $1`
	sqlAllStrings   = `SELECT id, value FROM audit_strings`

	// The version-4 audit_log, read once by migration 6.
	sqlV4Columns = `seq, recorded_at, session_id, context_id, principal, role, transport,
	tool, capability, tier, phase, decision, rule_id, reason, args, outcome,
	violation, error_ref, error_text, duration_micros, output_bytes, truncated,
	extra, prev_hash, hash, instance`
	sqlV4Page = `SELECT ` + sqlV4Columns + ` FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2`
	// sqlV4Stray is the rows at seq <= 0 (an insert by hand): converted
	// too, so a tampered log stays visibly tampered.
	sqlV4Stray = `SELECT ` + sqlV4Columns + ` FROM audit_log WHERE seq <= 0 ORDER BY seq`
)

const (
	sqlGetKey    = `SELECT key_hex FROM keys WHERE name = $1`
	sqlInsertKey = `INSERT INTO keys (name, key_hex, created_at) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO NOTHING`
)

const (
	sqlGetSetting    = `SELECT value FROM settings WHERE name = $1`
	sqlGetSettingAt  = `SELECT value, updated_at FROM settings WHERE name = $1`
	sqlUpsertSetting = `INSERT INTO settings (name, value, updated_by, reason, updated_at)
	VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (name) DO UPDATE SET value = excluded.value,
		updated_by = excluded.updated_by, reason = excluded.reason,
		updated_at = excluded.updated_at`
	// sqlDataVersion changes on a connection only when another connection
	// commits; SQLite-only, used solely for the kill-switch cache.
	sqlDataVersion = `PRAGMA data_version`
)

// settingKillSwitch is the settings row of the kill switch.
const settingKillSwitch = "kill_switch"

// settingKillChange holds the id of the last kill switch change recorded in
// the chain (see DB.RecordKillSwitch).
const settingKillChange = "kill_switch_change"

// declColumns is the column list shared by the insert and the selects; its
// order is the order of [declArgs] and [scanDeclaration].
const declColumns = `id, context_id, principal, state, fingerprint, need, decision,
	rule_id, reason, decided_by, created_at, decided_at, expires_at,
	executed_at, attempts, result, history, updated_at`

// Declarations are compared and ordered on id as TEXT: SQLite's default
// BINARY collation compares bytes, as Go compares strings; on PostgreSQL
// id and created_at are COLLATE "C" for the same order (sortedText, ddl.go).
const (
	// sqlInsertDeclaration inserts unless the id is taken; the caller
	// reads RowsAffected to tell ErrExists, so concurrent Creates of one
	// id race on the primary key, not on a read before the insert.
	sqlInsertDeclaration = `INSERT INTO declarations (` + declColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
	ON CONFLICT (id) DO NOTHING`
	sqlGetDeclaration = `SELECT ` + declColumns + ` FROM declarations WHERE id = $1`
	// sqlUpdateDeclaration writes every column but id, in declColumns
	// order, and only over the state the transition read ($19): inside
	// the BEGIN IMMEDIATE transaction that read it this cannot miss, and
	// RowsAffected says so.
	sqlUpdateDeclaration = `UPDATE declarations SET context_id = $2, principal = $3,
	state = $4, fingerprint = $5, need = $6, decision = $7, rule_id = $8,
	reason = $9, decided_by = $10, created_at = $11, decided_at = $12,
	expires_at = $13, executed_at = $14, attempts = $15, result = $16,
	history = $17, updated_at = $18
	WHERE id = $1 AND state = $19`
)

// sqlListDeclarations returns the List query and its arguments: an
// optional session, any number of states (an IN list of placeholders) and
// an optional limit, oldest first. Only placeholders are built here; no
// value is ever spliced into the text.
func sqlListDeclarations(session string, states []string, limit int) (string, []any) {
	var (
		where []string
		args  []any
	)
	next := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if session != "" {
		where = append(where, "context_id = "+next(session))
	}
	if len(states) > 0 {
		ph := make([]string, len(states))
		for i, s := range states {
			ph[i] = next(s)
		}
		where = append(where, "state IN ("+strings.Join(ph, ", ")+")")
	}
	q := `SELECT ` + declColumns + ` FROM declarations`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at, id`
	if limit > 0 {
		q += ` LIMIT ` + next(int64(limit))
	}
	return q, args
}

// contextColumns is the column list shared by the inserts and the selects;
// its order is the order of [contextArgs] and [scanContext].
const contextColumns = `id, parent, principal, role, policy, policy_version, phase,
	pools, env, created_at, created_by, updated_at`

// Contexts are ordered on created_at and id as TEXT (see the note on
// declarations above: COLLATE "C" on PostgreSQL).
const (
	// sqlInsertContext inserts unless the id is taken; RowsAffected tells
	// CreateContext's ErrExists and lets EnsureContext race on the primary
	// key instead of on a read before the insert.
	sqlInsertContext = `INSERT INTO contexts (` + contextColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	ON CONFLICT (id) DO NOTHING`
	sqlGetContext = `SELECT ` + contextColumns + ` FROM contexts WHERE id = $1`
	// sqlUpdateContext writes every column but id, in contextColumns order.
	sqlUpdateContext = `UPDATE contexts SET parent = $2, principal = $3, role = $4,
	policy = $5, policy_version = $6, phase = $7, pools = $8, env = $9,
	created_at = $10, created_by = $11, updated_at = $12
	WHERE id = $1`
	sqlListContexts            = `SELECT ` + contextColumns + ` FROM contexts ORDER BY created_at, id`
	sqlListContextsOfPrincipal = `SELECT ` + contextColumns + ` FROM contexts WHERE principal = $1 ORDER BY created_at, id`
)

// sessionColumns is the column list shared by the insert and the selects;
// its order is the order of [sessionArgs] and [scanSession].
const sessionColumns = `id, context_id, principal, transport, elicitation, created_at,
	last_seen, closed_at, close_reason`

const (
	sqlInsertSession = `INSERT INTO transport_sessions (` + sessionColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (id) DO NOTHING`
	sqlGetSession = `SELECT ` + sessionColumns + ` FROM transport_sessions WHERE id = $1`
	// sqlCapSessions selects what the session cap counts, least recently
	// used first (the order it evicts in): the principal's open sessions
	// over one transport. sqlCapSessionsLive keeps only those seen after
	// $3, the new session's CreatedAt minus the idle timeout: "last_seen >
	// $3" is Session.Open's "now - LastSeen < idle", so the cap and Open
	// agree on the boundary.
	sqlCapSessions = `SELECT ` + sessionColumns + ` FROM transport_sessions
	WHERE principal = $1 AND transport = $2 AND closed_at IS NULL ORDER BY last_seen, created_at, id`
	sqlCapSessionsLive = `SELECT ` + sessionColumns + ` FROM transport_sessions
	WHERE principal = $1 AND transport = $2 AND closed_at IS NULL AND last_seen > $3 ORDER BY last_seen, created_at, id`
	sqlTouchSession = `UPDATE transport_sessions SET last_seen = $2
	WHERE id = $1 AND closed_at IS NULL`
	sqlCloseSession = `UPDATE transport_sessions SET closed_at = $2, close_reason = $3
	WHERE id = $1 AND closed_at IS NULL`
	// The idle sweep selects and then closes the same rows inside one
	// write transaction, so the two WHERE clauses see the same set.
	sqlIdleSessions = `SELECT ` + sessionColumns + ` FROM transport_sessions
	WHERE closed_at IS NULL AND last_seen < $1 ORDER BY created_at, id`
	sqlCloseIdleSessions = `UPDATE transport_sessions SET closed_at = $2, close_reason = $3
	WHERE closed_at IS NULL AND last_seen < $1`
)

// sqlListSessions returns the ListSessions query and its arguments: an
// optional context and whether to leave out closed sessions, oldest first.
func sqlListSessions(contextID string, openOnly bool) (string, []any) {
	var (
		where []string
		args  []any
	)
	if contextID != "" {
		args = append(args, contextID)
		where = append(where, "context_id = $1")
	}
	if openOnly {
		where = append(where, "closed_at IS NULL")
	}
	q := `SELECT ` + sessionColumns + ` FROM transport_sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	return q + ` ORDER BY created_at, id`, args
}

const (
	sqlGetUsage    = `SELECT value FROM usage WHERE key = $1`
	sqlUpsertUsage = `INSERT INTO usage (key, value, updated_at) VALUES ($1, $2, $3)
	ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
)

// sqlGetUsages returns the query reading the usage rows of n keys, bound
// as $1..$n: an IN list of placeholders, never spliced values.
func sqlGetUsages(n int) string {
	ph := make([]string, n)
	for i := range ph {
		ph[i] = "$" + strconv.Itoa(i+1)
	}
	return `SELECT key, value FROM usage WHERE key IN (` + strings.Join(ph, ", ") + `)`
}

const (
	// sqlInsertChallenge records a used nonce; RowsAffected 0 is a replay,
	// decided by the primary key even between processes.
	sqlInsertChallenge = `INSERT INTO used_challenges (nonce, expires_at) VALUES ($1, $2)
	ON CONFLICT (nonce) DO NOTHING`
	sqlForgetChallenges = `DELETE FROM used_challenges WHERE expires_at < $1`
)
