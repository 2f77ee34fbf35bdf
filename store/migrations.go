package store

// The store's schema, once for both engines: every numbered migration, as
// steps in the words of ddl.go, from which [migrations] (SQLite) and
// [pgMigrations] (PostgreSQL) are rendered. The two engines get the same
// versions and names, tables, columns and keys; where they spell a type
// differently the column's type says so, and what only PostgreSQL needs
// (the kill switch trigger) is a [pgOnly] step. The schema each version
// leaves, on each engine, is golden (testdata/schema, TestSchemaGolden):
// written by the two hand-kept copies this description replaced, so that
// stores they created migrate as new ones do.
var schema = []migration{
	{
		version: 1,
		name:    "audit log, audit head, keys, settings",
		steps: []step{
			table{name: "audit_log", cols: []column{
				{"seq", bigint, primaryKey},
				{"recorded_at", sortedText, notNull},
				{"session_id", callerText, notNull},
				{"context_id", callerText, notNull},
				{"principal", callerText, notNull},
				{"role", callerText, notNull},
				{"transport", callerText, notNull},
				{"tool", callerText, notNull},
				{"capability", callerText, notNull},
				{"tier", callerText, notNull},
				{"phase", callerText, notNull},
				{"decision", callerText, notNull},
				{"rule_id", callerText, notNull},
				{"reason", callerText, notNull},
				{"args", callerText, notNull},
				{"outcome", callerText, notNull},
				{"violation", callerText, notNull},
				{"error_ref", callerText, notNull},
				{"error_text", callerText, notNull},
				{"duration_micros", bigint, notNull},
				{"output_bytes", bigint, notNull},
				{"truncated", integer, notNull},
				{"extra", callerText, notNull},
				{"prev_hash", text, notNull},
				{"hash", text, notNull},
			}},
			// audit_head holds the seq and hash of the last record, updated
			// in the same transaction as every append. Without it, deleting
			// the newest records would leave a shorter chain that still
			// verifies.
			table{name: "audit_head", cols: []column{
				{"id", integer, primaryKey | singleRow},
				{"last_seq", bigint, notNull},
				{"last_hash", text, notNull},
			}},
			stmt(`INSERT INTO audit_head (id, last_seq, last_hash) VALUES (1, 0, '` + genesisHash + `')`),
			table{name: "keys", cols: []column{
				{"name", text, primaryKey},
				{"key_hex", text, notNull},
				{"created_at", text, notNull},
			}},
			table{name: "settings", cols: []column{
				{"name", text, primaryKey},
				{"value", text, notNull},
				{"updated_by", text, notNull},
				{"reason", text, notNull},
				{"updated_at", text, notNull},
			}},
		},
	},
	{
		version: 2,
		name:    "declarations",
		steps: []step{
			// One row per declaration (see declarations.go). need, result
			// and history are JSON in TEXT; need holds exactly the bytes of
			// Need.Canonical, so sha256(need) is the fingerprint of a valid
			// need. A zero time is NULL, so a sweep comparing expires_at
			// skips declarations without a deadline. updated_at is the
			// store's own: when the row was last written.
			table{name: "declarations", cols: []column{
				{"id", sortedText, primaryKey},
				{"session_id", text, notNull},
				{"principal", text, notNull},
				{"state", text, notNull},
				{"fingerprint", text, notNull},
				{"need", text, notNull},
				{"decision", text, notNull},
				{"rule_id", text, notNull},
				{"reason", text, notNull},
				{"decided_by", text, notNull},
				{"created_at", sortedText, notNull},
				{"decided_at", sortedText, nullable},
				{"expires_at", sortedText, nullable},
				{"executed_at", sortedText, nullable},
				{"attempts", bigint, notNull},
				{"result", text, nullable},
				{"history", text, notNull},
				{"updated_at", sortedText, notNull},
			}},
			stmt(`CREATE INDEX declarations_session ON declarations (session_id)`),
			stmt(`CREATE INDEX declarations_state_expires ON declarations (state, expires_at)`),
		},
	},
	{
		version: 3,
		name:    "runtime contexts: declarations keyed to contexts, sessions, usage, challenges",
		steps: []step{
			// A declaration belongs to the runtime context it was declared
			// in, not to a transport session: it outlives reconnects and is
			// collectable from any session of the context.
			stmt(`ALTER TABLE declarations RENAME COLUMN session_id TO context_id`),
			stmt(`DROP INDEX declarations_session`),
			stmt(`CREATE INDEX declarations_context ON declarations (context_id)`),
			// One row per runtime context (see contexts.go). pools and env
			// are JSON in TEXT; a context is never deleted, so a
			// declaration's context_id always resolves.
			table{name: "contexts", cols: []column{
				{"id", sortedText, primaryKey},
				{"parent", text, notNull},
				{"principal", text, notNull},
				{"role", text, notNull},
				{"policy", text, notNull},
				{"policy_version", text, notNull},
				{"phase", text, notNull},
				{"pools", text, notNull},
				{"env", text, notNull},
				{"created_at", sortedText, notNull},
				{"created_by", text, notNull},
				{"updated_at", sortedText, notNull},
			}},
			stmt(`CREATE INDEX contexts_principal ON contexts (principal)`),
			// Transport sessions: handles onto a context. closed_at is NULL
			// while open, so the session cap counts "closed_at IS NULL".
			table{name: "transport_sessions", cols: []column{
				{"id", sortedText, primaryKey},
				{"context_id", text, notNull},
				{"principal", text, notNull},
				{"transport", text, notNull},
				{"elicitation", integer, notNull},
				{"created_at", sortedText, notNull},
				{"last_seen", sortedText, notNull},
				{"closed_at", sortedText, nullable},
				{"close_reason", text, notNull},
			}},
			stmt(`CREATE INDEX transport_sessions_principal ON transport_sessions (principal, closed_at)`),
			stmt(`CREATE INDEX transport_sessions_context ON transport_sessions (context_id)`),
			// Limit usage: opaque values the runner keeps per key (a
			// counter, a window), read and written in one transaction.
			table{name: "usage", cols: []column{
				{"key", text, primaryKey},
				{"value", text, notNull},
				{"updated_at", text, notNull},
			}},
			// Single-use approval challenges already used. Rows past
			// expires_at are deleted by the next UseChallenge; the index
			// keeps that delete from scanning the table.
			table{name: "used_challenges", cols: []column{
				{"nonce", text, primaryKey},
				{"expires_at", sortedText, notNull},
			}},
			stmt(`CREATE INDEX used_challenges_expires ON used_challenges (expires_at)`),
		},
	},
	{
		version: 4,
		name:    "audit records name the instance that wrote them",
		steps: []step{
			// Several instances append to one chain (PostgreSQL); each
			// record says which one wrote it. Records from before this
			// migration read back with an empty instance and keep their
			// v1 hashes (see audit.Record.Canonical). TEXT on PostgreSQL too:
			// an instance name is checked UTF-8 without NUL (Options).
			stmt(`ALTER TABLE audit_log ADD COLUMN instance TEXT NOT NULL DEFAULT ''`),
			// Any write of the kill_switch row, or a TRUNCATE of settings,
			// tells every listening PostgreSQL instance, so its kill switch
			// cache learns of it at once (killswitch_pg.go); the payload is
			// not trusted, listeners re-read the row. SQLite's cache
			// watches data_version instead.
			pgOnly{
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
	},
	{
		version: 5,
		name:    "pinned tool definitions of upstream MCP servers",
		steps: []step{
			// One row per upstream tool: its review state and the pin
			// (approved and seen definitions, digests, flags) as JSON.
			// Changed only in read-modify-write transactions
			// (UpdateUpstreamPins), under one lock per upstream.
			table{name: "upstream_pins", key: "upstream, tool", cols: []column{
				{"upstream", sortedText, notNull},
				{"tool", sortedText, notNull},
				{"state", text, notNull},
				{"pin", text, notNull},
				{"updated_at", text, notNull},
			}},
		},
	},
	{
		version: 6,
		name:    "compact audit rows: interned strings, binary hashes and times",
		steps: []step{
			// Issue 11: ~690 B per record became ~250. Every string field of
			// a record is interned here once (id 0, never stored, is the
			// empty string); a record names them by id. The hash covers
			// the canonical encoding of the values (audit.Record.Canonical), not
			// this storage form, so converting rows keeps every hash.
			table{name: "audit_strings", cols: []column{
				{"id", autoID, primaryKey},
				{"value", blob, unique},
			}},
			// Where the store's chain starts once records were rotated
			// out into segments (rotate.go); no row: at record 1.
			table{name: "audit_anchor", cols: []column{
				{"id", integer, primaryKey | singleRow},
				{"first_seq", bigint, notNull},
				{"prev_hash", text, notNull},
				{"mac", text, notNull},
			}},
			// seq is the row's id, so in SQLite the table is its own seq
			// index (audit_log kept a second B-tree for it). at is Unix
			// microseconds; fields packs the string ids, duration, output
			// bytes and truncated as varints (rowcodec.go); args and extra
			// are the exact bytes; prev_hash and hash are the 32 raw bytes
			// of the SHA-256.
			table{name: "audit_records", cols: []column{
				{"seq", rowID, primaryKey},
				{"at", bigint, notNull},
				{"fields", blob, notNull},
				{"args", blob, notNull},
				{"extra", blob, notNull},
				{"prev_hash", blob, notNull},
				{"hash", blob, notNull},
			}},
		},
		convert: convertAuditLog,
		after:   []string{`DROP TABLE audit_log`},
	},
	provenanceMigration,        // 7, provenance.go
	upstreamDecisionsMigration, // 8, upstreams.go
	upstreamHealthMigration,    // 9, upstream_health.go
	liveMigration,              // 10, labels.go
	stateMigration,             // 11, statecache.go
}

// The migrations in each engine's words.
var (
	migrations   = forEngine(schema, false)
	pgMigrations = forEngine(schema, true)
)

// genesisHash is the prev_hash of the first record: 64 zeros.
const genesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// sqlCreateMigrations creates the table of applied migrations, the same on
// both engines; it is created before the first migration runs.
const sqlCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT NOT NULL PRIMARY KEY,
	name       TEXT   NOT NULL,
	applied_at TEXT   NOT NULL
)`

const (
	sqlSchemaVersion   = `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`
	sqlRecordMigration = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
)
