package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// All of the store's SQL lives in this file, so that a PostgreSQL twin can be
// written by following it line for line. The rules that keep it portable:
//
//   - Plain types only: BIGINT for every int64 (PostgreSQL's INTEGER is 32
//     bits; SQLite gives BIGINT integer affinity), TEXT for strings, keys
//     (hex) and times (fixed-width RFC 3339, UTC, microseconds), and
//     booleans as INTEGER 0/1. No JSON types. The audit rows are the
//     exception (migration 6, rowcodec.go): BLOB/BYTEA for their bytes
//     and hashes, BIGINT Unix microseconds, strings interned — they are
//     most of the file.
//   - Every table has an explicit primary key; nothing reads or relies on
//     SQLite's rowid (seq is BIGINT PRIMARY KEY, which SQLite does not alias
//     to the rowid).
//   - Placeholders are $1, $2, ... which both engines accept.
//   - No SQLite-only functions. The hash chain is computed in Go over the
//     values as read back (see canonical.go), never in SQL.
//   - Upserts use INSERT ... ON CONFLICT, which both engines support.
//
// The only SQLite-specific statements are the PRAGMAs in db.go and the
// transaction mode (BEGIN IMMEDIATE, set through the DSN); PostgreSQL would
// take a table lock or an advisory lock on audit_head instead, and read the
// declaration a transition compares with SELECT ... FOR UPDATE.

// migration is one numbered, append-only schema step. Migrations are applied
// in order, each in its own write transaction together with its row in
// schema_migrations, so a crash leaves the file at a whole version. Adding a
// table later (declarations, approvals, evidence) is one new entry at the end
// of [migrations]; an entry, once released, is never edited.
type migration struct {
	version int64
	name    string
	stmts   []string
	// convert, when set, runs after stmts in the same transaction: a
	// migration that rewrites rows in Go (5: the compact audit rows).
	convert func(ctx context.Context, tx *sql.Tx, d *dialect) error
	// after, when set, runs after convert (dropping what it converted).
	after []string
}

// genesisHash is the prev_hash of the first record: 64 zeros.
const genesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

const sqlCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT NOT NULL PRIMARY KEY,
	name       TEXT   NOT NULL,
	applied_at TEXT   NOT NULL
)`

// sqlMigrationsTableExists is the one catalogue query; the PostgreSQL twin
// asks information_schema.tables instead.
const sqlMigrationsTableExists = `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`

const (
	sqlSchemaVersion   = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`
	sqlRecordMigration = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
)

var migrations = []migration{
	{
		version: 1,
		name:    "audit log, audit head, keys, settings",
		stmts: []string{
			`CREATE TABLE audit_log (
				seq             BIGINT  NOT NULL PRIMARY KEY,
				recorded_at     TEXT    NOT NULL,
				session_id      TEXT    NOT NULL,
				context_id      TEXT    NOT NULL,
				principal       TEXT    NOT NULL,
				role            TEXT    NOT NULL,
				transport       TEXT    NOT NULL,
				tool            TEXT    NOT NULL,
				capability      TEXT    NOT NULL,
				tier            TEXT    NOT NULL,
				phase           TEXT    NOT NULL,
				decision        TEXT    NOT NULL,
				rule_id         TEXT    NOT NULL,
				reason          TEXT    NOT NULL,
				args            TEXT    NOT NULL,
				outcome         TEXT    NOT NULL,
				violation       TEXT    NOT NULL,
				error_ref       TEXT    NOT NULL,
				error_text      TEXT    NOT NULL,
				duration_micros BIGINT  NOT NULL,
				output_bytes    BIGINT  NOT NULL,
				truncated       INTEGER NOT NULL,
				extra           TEXT    NOT NULL,
				prev_hash       TEXT    NOT NULL,
				hash            TEXT    NOT NULL
			)`,
			// audit_head holds the seq and hash of the last record, updated
			// in the same transaction as every append. Without it, deleting
			// the newest records would leave a shorter chain that still
			// verifies.
			`CREATE TABLE audit_head (
				id        INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
				last_seq  BIGINT  NOT NULL,
				last_hash TEXT    NOT NULL
			)`,
			`INSERT INTO audit_head (id, last_seq, last_hash) VALUES (1, 0, '` + genesisHash + `')`,
			`CREATE TABLE keys (
				name       TEXT NOT NULL PRIMARY KEY,
				key_hex    TEXT NOT NULL,
				created_at TEXT NOT NULL
			)`,
			`CREATE TABLE settings (
				name       TEXT NOT NULL PRIMARY KEY,
				value      TEXT NOT NULL,
				updated_by TEXT NOT NULL,
				reason     TEXT NOT NULL,
				updated_at TEXT NOT NULL
			)`,
		},
	},
	{
		version: 2,
		name:    "declarations",
		stmts: []string{
			// One row per declaration (see declarations.go). need, result
			// and history are JSON in TEXT; need holds exactly the bytes of
			// Need.Canonical, so sha256(need) is the fingerprint of a valid
			// need. A zero time is NULL, so a sweep comparing expires_at
			// skips declarations without a deadline. updated_at is the
			// store's own: when the row was last written.
			`CREATE TABLE declarations (
				id          TEXT   NOT NULL PRIMARY KEY,
				session_id  TEXT   NOT NULL,
				principal   TEXT   NOT NULL,
				state       TEXT   NOT NULL,
				fingerprint TEXT   NOT NULL,
				need        TEXT   NOT NULL,
				decision    TEXT   NOT NULL,
				rule_id     TEXT   NOT NULL,
				reason      TEXT   NOT NULL,
				decided_by  TEXT   NOT NULL,
				created_at  TEXT   NOT NULL,
				decided_at  TEXT,
				expires_at  TEXT,
				executed_at TEXT,
				attempts    BIGINT NOT NULL,
				result      TEXT,
				history     TEXT   NOT NULL,
				updated_at  TEXT   NOT NULL
			)`,
			`CREATE INDEX declarations_session ON declarations (session_id)`,
			`CREATE INDEX declarations_state_expires ON declarations (state, expires_at)`,
		},
	},
	{
		version: 3,
		name:    "runtime contexts: declarations keyed to contexts, sessions, usage, challenges",
		stmts: []string{
			// A declaration belongs to the runtime context it was declared
			// in, not to a transport session: it outlives reconnects and is
			// collectable from any session of the context.
			`ALTER TABLE declarations RENAME COLUMN session_id TO context_id`,
			`DROP INDEX declarations_session`,
			`CREATE INDEX declarations_context ON declarations (context_id)`,
			// One row per runtime context (see contexts.go). pools and env
			// are JSON in TEXT; a context is never deleted, so a
			// declaration's context_id always resolves.
			`CREATE TABLE contexts (
				id             TEXT NOT NULL PRIMARY KEY,
				parent         TEXT NOT NULL,
				principal      TEXT NOT NULL,
				role           TEXT NOT NULL,
				policy         TEXT NOT NULL,
				policy_version TEXT NOT NULL,
				phase          TEXT NOT NULL,
				pools          TEXT NOT NULL,
				env            TEXT NOT NULL,
				created_at     TEXT NOT NULL,
				created_by     TEXT NOT NULL,
				updated_at     TEXT NOT NULL
			)`,
			`CREATE INDEX contexts_principal ON contexts (principal)`,
			// Transport sessions: handles onto a context. closed_at is NULL
			// while open, so the session cap counts "closed_at IS NULL".
			`CREATE TABLE transport_sessions (
				id           TEXT    NOT NULL PRIMARY KEY,
				context_id   TEXT    NOT NULL,
				principal    TEXT    NOT NULL,
				transport    TEXT    NOT NULL,
				elicitation  INTEGER NOT NULL,
				created_at   TEXT    NOT NULL,
				last_seen    TEXT    NOT NULL,
				closed_at    TEXT,
				close_reason TEXT    NOT NULL
			)`,
			`CREATE INDEX transport_sessions_principal ON transport_sessions (principal, closed_at)`,
			`CREATE INDEX transport_sessions_context ON transport_sessions (context_id)`,
			// Limit usage: opaque values the runner keeps per key (a
			// counter, a window), read and written in one transaction.
			`CREATE TABLE usage (
				key        TEXT NOT NULL PRIMARY KEY,
				value      TEXT NOT NULL,
				updated_at TEXT NOT NULL
			)`,
			// Single-use approval challenges already used. Rows past
			// expires_at are deleted by the next UseChallenge; the index
			// keeps that delete from scanning the table.
			`CREATE TABLE used_challenges (
				nonce      TEXT NOT NULL PRIMARY KEY,
				expires_at TEXT NOT NULL
			)`,
			`CREATE INDEX used_challenges_expires ON used_challenges (expires_at)`,
		},
	},
	{
		version: 4,
		name:    "audit records name the instance that wrote them",
		stmts: []string{
			// Several instances append to one chain (PostgreSQL); each
			// record says which one wrote it. Records from before this
			// migration read back with an empty instance and keep their
			// v1 hashes (see audit.Record.Canonical).
			`ALTER TABLE audit_log ADD COLUMN instance TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		version: 5,
		name:    "pinned tool definitions of upstream MCP servers",
		stmts: []string{
			// One row per upstream tool: its review state and the pin
			// (approved and seen definitions, digests, flags) as JSON.
			// Changed only in read-modify-write transactions
			// (UpdateUpstreamPins), under one lock per upstream.
			`CREATE TABLE upstream_pins (
				upstream   TEXT NOT NULL,
				tool       TEXT NOT NULL,
				state      TEXT NOT NULL,
				pin        TEXT NOT NULL,
				updated_at TEXT NOT NULL,
				PRIMARY KEY (upstream, tool)
			)`,
		},
	},
	{
		version: 6,
		name:    "compact audit rows: interned strings, binary hashes and times",
		stmts: []string{
			// Issue 11: ~690 B per record became ~250. Every string field of
			// a record is interned here once (id 0, never stored, is the
			// empty string); a record names them by id. The hash covers
			// the canonical encoding of the values (audit.Record.Canonical), not
			// this storage form, so converting rows keeps every hash.
			`CREATE TABLE audit_strings (
				id    INTEGER NOT NULL PRIMARY KEY,
				value BLOB    NOT NULL UNIQUE
			)`,
			// seq is INTEGER PRIMARY KEY, SQLite's rowid, so the table is
			// its own seq index (audit_log kept a second B-tree for it).
			// at is Unix microseconds; fields packs the string ids,
			// duration, output bytes and truncated as varints (rowcodec.go);
			// args and extra are the exact bytes; prev_hash and hash are
			// the 32 raw bytes of the SHA-256.
			// Where the store's chain starts once records were rotated
			// out into segments (rotate.go); no row: at record 1.
			`CREATE TABLE audit_anchor (
				id        INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
				first_seq BIGINT  NOT NULL,
				prev_hash TEXT    NOT NULL,
				mac       TEXT    NOT NULL
			)`,
			`CREATE TABLE audit_records (
				seq       INTEGER NOT NULL PRIMARY KEY,
				at        BIGINT  NOT NULL,
				fields    BLOB    NOT NULL,
				args      BLOB    NOT NULL,
				extra     BLOB    NOT NULL,
				prev_hash BLOB    NOT NULL,
				hash      BLOB    NOT NULL
			)`,
		},
		convert: convertAuditLog,
		after:   []string{`DROP TABLE audit_log`},
	},
}

// recordColumns is the column list of audit_records shared by the insert
// and the selects; its order is the order of [DB.rowArgs] and [scanRow].
const recordColumns = `seq, at, fields, args, extra, prev_hash, hash`

const (
	sqlInsertRecord = `INSERT INTO audit_records (` + recordColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	sqlReadHead     = `SELECT last_seq, last_hash FROM audit_head WHERE id = 1`
	sqlUpdateHead   = `UPDATE audit_head SET last_seq = $1, last_hash = $2 WHERE id = 1`
	sqlLastSeq      = `SELECT last_seq FROM audit_head WHERE id = 1`
	sqlScanAfter    = `SELECT ` + recordColumns + ` FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT $2`
	sqlTail         = `SELECT ` + recordColumns + ` FROM audit_records ORDER BY seq DESC LIMIT $1`
	sqlVerifyAll    = `SELECT ` + recordColumns + ` FROM audit_records ORDER BY seq` // every row, a seq ≤ 0 slipped in too
	sqlVerifyAfter  = `SELECT ` + recordColumns + ` FROM audit_records WHERE seq > $1 ORDER BY seq`
	sqlHashAt       = `SELECT hash FROM audit_records WHERE seq = $1`

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
// BINARY collation compares bytes, as Go compares strings. The PostgreSQL
// twin needs COLLATE "C" on id and created_at for the same order.
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
// declarations above: the PostgreSQL twin needs COLLATE "C").
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
	// sqlCountOpenSessions counts what the session cap counts without an
	// idle timeout; sqlCountLiveSessions with one, where $2 is the
	// session's CreatedAt minus the timeout. "last_seen > $2" is
	// Session.Open's "now - LastSeen < idle", so the cap and Open agree on
	// the boundary.
	sqlCountOpenSessions = `SELECT COUNT(*) FROM transport_sessions
	WHERE principal = $1 AND closed_at IS NULL`
	sqlCountLiveSessions = `SELECT COUNT(*) FROM transport_sessions
	WHERE principal = $1 AND closed_at IS NULL AND last_seen > $2`
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
