package store

// All of the store's SQL lives in this file, so that a PostgreSQL twin can be
// written by following it line for line. The rules that keep it portable:
//
//   - Plain types only: BIGINT for every int64 (PostgreSQL's INTEGER is 32
//     bits; SQLite gives BIGINT integer affinity), TEXT for strings, hashes,
//     keys (hex) and times (fixed-width RFC 3339, UTC, microseconds), and
//     booleans as INTEGER 0/1. No BLOB/BYTEA, no JSON types.
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
// take a table lock or an advisory lock on audit_head instead.

// migration is one numbered, append-only schema step. Migrations are applied
// in order, each in its own write transaction together with its row in
// schema_migrations, so a crash leaves the file at a whole version. Adding a
// table later (declarations, approvals, evidence) is one new entry at the end
// of [migrations]; an entry, once released, is never edited.
type migration struct {
	version int64
	name    string
	stmts   []string
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
}

// auditColumns is the column list shared by the insert and the selects; its
// order is the order of [recordArgs] and [scanRecord].
const auditColumns = `seq, recorded_at, session_id, context_id, principal, role, transport,
	tool, capability, tier, phase, decision, rule_id, reason, args, outcome,
	violation, error_ref, error_text, duration_micros, output_bytes, truncated,
	extra, prev_hash, hash`

const (
	sqlInsertRecord = `INSERT INTO audit_log (` + auditColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
	 $18, $19, $20, $21, $22, $23, $24, $25)`
	sqlReadHead   = `SELECT last_seq, last_hash FROM audit_head WHERE id = 1`
	sqlUpdateHead = `UPDATE audit_head SET last_seq = $1, last_hash = $2 WHERE id = 1`
	sqlLastSeq    = `SELECT last_seq FROM audit_head WHERE id = 1`
	sqlScanAfter  = `SELECT ` + auditColumns + ` FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2`
	sqlTail       = `SELECT ` + auditColumns + ` FROM audit_log ORDER BY seq DESC LIMIT $1`
	sqlVerifyAll  = `SELECT ` + auditColumns + ` FROM audit_log ORDER BY seq`
)

const (
	sqlGetKey    = `SELECT key_hex FROM keys WHERE name = $1`
	sqlInsertKey = `INSERT INTO keys (name, key_hex, created_at) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO NOTHING`
)

const (
	sqlGetSetting    = `SELECT value FROM settings WHERE name = $1`
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
