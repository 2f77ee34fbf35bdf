package store

import (
	"database/sql"
)

// dialect is what differs between the two engines the store runs on. The
// rest — the schema (migrations.go, spelled per engine by ddl.go), every
// statement in schema.go, the hash chain, the row codecs — is shared.
//
// SQLite serialises every write transaction with one file lock (BEGIN
// IMMEDIATE, set through the DSN), so a read inside a write transaction
// can never be raced. PostgreSQL runs write transactions concurrently at
// READ COMMITTED; the same guarantees come from locks taken inside the
// transaction:
//
//   - the chain head row is read with SELECT ... FOR UPDATE, so appends
//     from every instance queue on it and seqs stay contiguous
//     (TestPostgresAppendAcrossInstances);
//   - a declaration's and a context's read-modify-write read their row
//     FOR UPDATE (TestPostgresCollectOnce);
//   - what has no row to lock — a principal's session cap, a limit's usage
//     keys, the kill switch change, the migrations — takes a transaction
//     advisory lock named after it ([DB.lockNames]), in sorted order so
//     two transactions cannot deadlock.
type dialect struct {
	name       string
	migrations []migration

	// tableExists counts the schema_migrations table (0 or 1).
	tableExists string

	// The reads that a write transaction bases its write on.
	readHeadForUpdate, getDeclForUpdate, getContextForUpdate string
	// getLiveForUpdate reads a context's provenance_live row (labels.go).
	getLiveForUpdate string
	// idleSessions is the idle sweep's select; PostgreSQL locks the rows
	// it will close, so a concurrent touch waits instead of slipping
	// between the select and the update.
	idleSessions string

	// verifyAll and verifyAfter select the rows Verify checks; packed
	// means as sqlitePackedRow (scanPacked), else as recordColumns.
	verifyAll, verifyAfter string
	packed                 bool

	// internString and stringID add a string to audit_strings and find
	// its id: unique on the value in SQLite, on its SHA-256 in PostgreSQL.
	internString, stringID string

	// verifyTx is how Verify opens its snapshot: PostgreSQL needs
	// REPEATABLE READ for the rows and the head to be one snapshot while
	// other instances append; SQLite's read transaction already is one.
	verifyTx *sql.TxOptions

	// advisory: take pg_advisory_xact_lock for the named resources.
	advisory bool
}

var sqliteDialect = &dialect{
	name:                "sqlite",
	migrations:          migrations,
	tableExists:         sqlMigrationsTableExists,
	readHeadForUpdate:   sqlReadHead,
	getDeclForUpdate:    sqlGetDeclaration,
	getContextForUpdate: sqlGetContext,
	getLiveForUpdate:    sqlGetLive,
	idleSessions:        sqlIdleSessions,
	internString:        sqlInternString,
	stringID:            sqlStringID,
	verifyAll:           sqliteVerifyAll,
	verifyAfter:         sqliteVerifyAfter,
	packed:              true,
}

var postgresDialect = &dialect{
	name:                "postgres",
	migrations:          pgMigrations,
	tableExists:         pgMigrationsTableExists,
	readHeadForUpdate:   sqlReadHead + ` FOR UPDATE`,
	getDeclForUpdate:    sqlGetDeclaration + ` FOR UPDATE`,
	getContextForUpdate: sqlGetContext + ` FOR UPDATE`,
	getLiveForUpdate:    sqlGetLive + ` FOR UPDATE`,
	idleSessions:        sqlIdleSessions + ` FOR UPDATE`,
	internString:        pgInternString,
	stringID:            pgStringID,
	verifyAll:           sqlVerifyAll,
	verifyAfter:         sqlVerifyAfter,
	verifyTx:            &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	advisory:            true,
}

// The queries only PostgreSQL needs.
const (
	pgMigrationsTableExists = `SELECT COUNT(*) FROM information_schema.tables
	WHERE table_schema = current_schema() AND table_name = 'schema_migrations'`

	// The interned strings are unique on sha256(value) (a unique column,
	// ddl.go), so that is what an insert conflicts on and a lookup finds.
	pgInternString = `INSERT INTO audit_strings (value) VALUES ($1) ON CONFLICT (sha256(value)) DO NOTHING`
	pgStringID     = `SELECT id FROM audit_strings WHERE sha256(value) = sha256($1)`
)

// pgKillChannel is the NOTIFY channel of kill switch changes (migration
// 4's trigger). Nothing listens any more: every call reads the row
// (DB.KillSwitchEngaged); the trigger stays, as migrations never change.
const pgKillChannel = "airlock_kill_switch"

// Names of the advisory locks (PostgreSQL only).
const (
	lockMigrate    = "airlock:migrate"
	lockKillSwitch = "airlock:kill_switch"
	lockIdleSweep  = "airlock:idle_sweep"
)

func lockSessionCap(principal string) string { return "airlock:session_cap:" + principal }
func lockUsage(key string) string            { return "airlock:usage:" + key }
