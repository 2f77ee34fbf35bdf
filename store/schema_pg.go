package store

// The PostgreSQL twin of the migrations in schema.go: the same versions and
// names (TestPostgresMigrationsMirrorSQLite), the same tables, columns and
// keys, in PostgreSQL's dialect. The differences, and why:
//
//   - The audit columns that hold caller bytes (ids, names, reasons, error
//     text, args, extra) are BYTEA: PostgreSQL's TEXT refuses NUL and
//     invalid UTF-8, and a record's hash covers its exact bytes, so the
//     store must give back what it was given (FuzzPostgresRecordHash).
//   - Columns that are ordered or compared as text (ids and the
//     fixed-width times) are COLLATE "C", so they sort by bytes as SQLite
//     and Go do, whatever the database's default collation.
//   - Migration 4 also installs a trigger that NOTIFYs airlock_kill_switch
//     whenever the kill_switch setting is written or deleted, by the store
//     or by hand, so every instance's kill switch cache learns of it at
//     once (see killswitch_pg.go).

const pgMigrationsTableExists = `SELECT COUNT(*) FROM information_schema.tables
	WHERE table_schema = current_schema() AND table_name = 'schema_migrations'`

// pgKillChannel is the NOTIFY channel of kill switch changes.
const pgKillChannel = "airlock_kill_switch"

var pgMigrations = []migration{
	{
		version: 1,
		name:    "audit log, audit head, keys, settings",
		stmts: []string{
			`CREATE TABLE audit_log (
				seq             BIGINT  NOT NULL PRIMARY KEY,
				recorded_at     TEXT    COLLATE "C" NOT NULL,
				session_id      BYTEA   NOT NULL,
				context_id      BYTEA   NOT NULL,
				principal       BYTEA   NOT NULL,
				role            BYTEA   NOT NULL,
				transport       BYTEA   NOT NULL,
				tool            BYTEA   NOT NULL,
				capability      BYTEA   NOT NULL,
				tier            BYTEA   NOT NULL,
				phase           BYTEA   NOT NULL,
				decision        BYTEA   NOT NULL,
				rule_id         BYTEA   NOT NULL,
				reason          BYTEA   NOT NULL,
				args            BYTEA   NOT NULL,
				outcome         BYTEA   NOT NULL,
				violation       BYTEA   NOT NULL,
				error_ref       BYTEA   NOT NULL,
				error_text      BYTEA   NOT NULL,
				duration_micros BIGINT  NOT NULL,
				output_bytes    BIGINT  NOT NULL,
				truncated       INTEGER NOT NULL,
				extra           BYTEA   NOT NULL,
				prev_hash       TEXT    NOT NULL,
				hash            TEXT    NOT NULL
			)`,
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
			`CREATE TABLE declarations (
				id          TEXT   COLLATE "C" NOT NULL PRIMARY KEY,
				session_id  TEXT   NOT NULL,
				principal   TEXT   NOT NULL,
				state       TEXT   NOT NULL,
				fingerprint TEXT   NOT NULL,
				need        TEXT   NOT NULL,
				decision    TEXT   NOT NULL,
				rule_id     TEXT   NOT NULL,
				reason      TEXT   NOT NULL,
				decided_by  TEXT   NOT NULL,
				created_at  TEXT   COLLATE "C" NOT NULL,
				decided_at  TEXT   COLLATE "C",
				expires_at  TEXT   COLLATE "C",
				executed_at TEXT   COLLATE "C",
				attempts    BIGINT NOT NULL,
				result      TEXT,
				history     TEXT   NOT NULL,
				updated_at  TEXT   COLLATE "C" NOT NULL
			)`,
			`CREATE INDEX declarations_session ON declarations (session_id)`,
			`CREATE INDEX declarations_state_expires ON declarations (state, expires_at)`,
		},
	},
	{
		version: 3,
		name:    "runtime contexts: declarations keyed to contexts, sessions, usage, challenges",
		stmts: []string{
			`ALTER TABLE declarations RENAME COLUMN session_id TO context_id`,
			`DROP INDEX declarations_session`,
			`CREATE INDEX declarations_context ON declarations (context_id)`,
			`CREATE TABLE contexts (
				id             TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				parent         TEXT NOT NULL,
				principal      TEXT NOT NULL,
				role           TEXT NOT NULL,
				policy         TEXT NOT NULL,
				policy_version TEXT NOT NULL,
				phase          TEXT NOT NULL,
				pools          TEXT NOT NULL,
				env            TEXT NOT NULL,
				created_at     TEXT COLLATE "C" NOT NULL,
				created_by     TEXT NOT NULL,
				updated_at     TEXT COLLATE "C" NOT NULL
			)`,
			`CREATE INDEX contexts_principal ON contexts (principal)`,
			`CREATE TABLE transport_sessions (
				id           TEXT    COLLATE "C" NOT NULL PRIMARY KEY,
				context_id   TEXT    NOT NULL,
				principal    TEXT    NOT NULL,
				transport    TEXT    NOT NULL,
				elicitation  INTEGER NOT NULL,
				created_at   TEXT    COLLATE "C" NOT NULL,
				last_seen    TEXT    COLLATE "C" NOT NULL,
				closed_at    TEXT    COLLATE "C",
				close_reason TEXT    NOT NULL
			)`,
			`CREATE INDEX transport_sessions_principal ON transport_sessions (principal, closed_at)`,
			`CREATE INDEX transport_sessions_context ON transport_sessions (context_id)`,
			`CREATE TABLE usage (
				key        TEXT NOT NULL PRIMARY KEY,
				value      TEXT NOT NULL,
				updated_at TEXT NOT NULL
			)`,
			`CREATE TABLE used_challenges (
				nonce      TEXT NOT NULL PRIMARY KEY,
				expires_at TEXT COLLATE "C" NOT NULL
			)`,
			`CREATE INDEX used_challenges_expires ON used_challenges (expires_at)`,
		},
	},
	{
		version: 4,
		name:    "audit records name the instance that wrote them",
		stmts: []string{
			`ALTER TABLE audit_log ADD COLUMN instance TEXT NOT NULL DEFAULT ''`,
			// Any write of the kill_switch row, or a TRUNCATE of settings,
			// tells every listening instance; the payload is not trusted,
			// listeners re-read the row.
			`CREATE FUNCTION airlock_kill_switch_notify() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF TG_OP = 'TRUNCATE'
					OR (TG_OP = 'DELETE' AND OLD.name = 'kill_switch')
					OR (TG_OP <> 'DELETE' AND NEW.name = 'kill_switch') THEN
					PERFORM pg_notify('` + pgKillChannel + `', '');
				END IF;
				RETURN NULL;
			END $$`,
			`CREATE TRIGGER settings_kill_switch_notify AFTER INSERT OR UPDATE OR DELETE ON settings
				FOR EACH ROW EXECUTE FUNCTION airlock_kill_switch_notify()`,
			`CREATE TRIGGER settings_kill_switch_truncate AFTER TRUNCATE ON settings
				FOR EACH STATEMENT EXECUTE FUNCTION airlock_kill_switch_notify()`,
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
				upstream   TEXT COLLATE "C" NOT NULL,
				tool       TEXT COLLATE "C" NOT NULL,
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
			// See migration 6 in schema.go. Strings are unique on their
			// SHA-256, not on the value: a B-tree entry is limited to
			// about 2.7 kB, and an error text may be longer.
			`CREATE TABLE audit_strings (
				id    BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
				value BYTEA  NOT NULL
			)`,
			`CREATE UNIQUE INDEX audit_strings_value ON audit_strings (sha256(value))`,
			`CREATE TABLE audit_anchor (
				id        INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
				first_seq BIGINT  NOT NULL,
				prev_hash TEXT    NOT NULL,
				mac       TEXT    NOT NULL
			)`,
			`CREATE TABLE audit_records (
				seq       BIGINT NOT NULL PRIMARY KEY,
				at        BIGINT NOT NULL,
				fields    BYTEA  NOT NULL,
				args      BYTEA  NOT NULL,
				extra     BYTEA  NOT NULL,
				prev_hash BYTEA  NOT NULL,
				hash      BYTEA  NOT NULL
			)`,
		},
		convert: convertAuditLog,
		after:   []string{`DROP TABLE audit_log`},
	},
	pgProvenanceMigration, // 7, provenance.go
}

// The interned strings on PostgreSQL: unique on sha256(value).
const (
	pgInternString = `INSERT INTO audit_strings (value) VALUES ($1) ON CONFLICT (sha256(value)) DO NOTHING`
	pgStringID     = `SELECT id FROM audit_strings WHERE sha256(value) = sha256($1)`
)
