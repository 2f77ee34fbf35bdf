// Package store is Airlock's durable state: the hash-chained audit trail,
// persisted secret keys, the kill switch and the declarations of needs
// ([DB.Declarations], a [declarations.Store]), in one SQLite file (through
// the pure-Go modernc.org/sqlite driver; no cgo) — or, for several
// instances behind a load balancer, in one PostgreSQL database
// ([OpenPostgres], through pgx), which every instance shares.
//
// Both backends run the same code over database/sql; what differs is in
// dialect.go (how a write transaction keeps what it read: SQLite's one
// write lock, PostgreSQL's row and advisory locks), tx.go (the one way a
// transaction is set up, where those locks are taken), ddl.go (how each
// engine spells the one schema of migrations.go) and killswitch.go (how a
// call reads the kill switch: SQLite's data_version probe, PostgreSQL's
// row). The invariants below hold on
// both; where the mechanism differs, the PostgreSQL one is named.
//
// # Invariants
//
//   - Durable before return. [DB.Append] returns nil only after the
//     transaction holding the record has committed with synchronous=FULL in
//     WAL mode, i.e. after the WAL was fsynced. The runner writes the audit
//     record before a response leaves the server, so a call the agent saw
//     answered is on disk.
//   - Fail closed. If the record cannot be committed (disk full, lock held
//     past the busy timeout, broken connection) Append returns an error
//     wrapping [ErrUnavailable], and so does every other Append that shared
//     its group commit; nobody is told "ok" about an uncommitted record.
//     [DB.KillSwitch] and [DB.KillSwitchEngaged] report "engaged" on error.
//   - Chain. Records carry seq 1, 2, 3, ... and each carries the SHA-256 of
//     the record before it ([audit.Record.ComputeHash] defines the canonical
//     encoding; genesis prev_hash is 64 zeros). The head (last seq and hash)
//     is kept in its own row, updated in the same transaction as the
//     records. [DB.Verify] detects an edited, deleted, inserted or reordered
//     record, and deleted or added records at the end, and names the first
//     bad seq.
//   - One chain across processes. The chain head is read inside the write
//     transaction (BEGIN IMMEDIATE; on PostgreSQL SELECT ... FOR UPDATE of
//     the head row) — or, on SQLite, the head this writer last committed is
//     used, and the head's update is guarded by it (WHERE last_seq = ...):
//     a head another process moved fails the batch, which is retried from
//     the row — so the server and an operator CLI appending to the same
//     file at once, or several instances appending to one database, still
//     produce one contiguous, verifying chain. Each record names the
//     instance that appended it ([Options.Instance]).
//   - A call's content labels ([DB.AppendLabelled]) commit in its record's
//     transaction: both or neither.
//   - Cached rows are the store's rows. [DB.GetSession] and [DB.GetContext]
//     serve a row from memory only while a change counter the database
//     moves by trigger (statecache.go) is what it was when the row was read,
//     read again for the read (or once per call, after the call began).
//   - Single-use approvals across processes. [DeclarationStore.Transition]
//     reads a declaration and writes its next state in one BEGIN IMMEDIATE
//     transaction, so of the server beginning an execution and the
//     operator CLI acting on the same declaration from another process,
//     exactly one moves it; like Append, it returns only after the commit
//     was fsynced.
//   - Group commit. One writer goroutine per [DB] takes every queued Append
//     (up to [Options.MaxBatch]) into a single transaction, so N concurrent
//     calls cost about one fsync rather than N.
//   - Nothing else on the path. The writer never checkpoints the WAL (a
//     checkpointer goroutine does, on its own connection), and limit usage
//     and session touches commit without an fsync of their own: the next
//     audit commit's fsync makes them durable (checkpoint.go).
//   - Storage is not hashing. Records are stored compactly (rowcodec.go:
//     interned strings, packed numbers, binary hashes) and hashed over
//     [audit.Record.Canonical]; migration 6 converted older rows keeping every
//     hash.
//   - Rotation. [DB.Rotate] moves the oldest records into a sealed segment
//     file and leaves a signed [Anchor]; [DB.Verify] starts at the anchor,
//     [ReadSegments] and [CheckSeam] make segments and store one chain
//     (rotate.go, segment.go).
//
// The file and its directory are created 0600 and 0700: it holds the keys
// that [DB.Key] hands out for the redaction HMAC and attribution signing.
// Schema changes are numbered migrations applied once each, in a
// transaction; a file from a newer program is refused ([ErrSchemaTooNew]).
// [OpenReadOnly] is for the CLI's verify, tail, export and listing of
// declarations and cannot write.
//
// # Limits
//
// The chain is tamper-evident, not tamper-proof, and carries no secret:
//
//   - Anyone who can write the file and rewrites the chain from some record
//     on, recomputing every later hash and the head row, produces a chain
//     that verifies on its own. So does one who truncates the log and
//     rewrites the head to match, deletes every record, or puts back an
//     older copy of the file. Catching that needs an anchor outside the
//     file: package witness appends signed checkpoints of [DB.Head] to a
//     file of its own, and [DB.Head] and [DB.HashAt] make *DB the chain it
//     checks against (through the witness.Chain interface).
//   - The kill_switch setting is a mirror: the switch itself is a file
//     (package killswitch), so it trips without this file's write lock and
//     a restored copy cannot release it. [DB.RecordKillSwitch] records each
//     change once, however many processes notice it.
//   - Keys are stored in the same file as the audit trail; whoever can read
//     the file can forge HMACs and attributions.
//   - Verify reads every record after the anchor; it is linear in the
//     size of the store (a million records: about 3.5 s of CPU, spread
//     over two readers and the hashing workers; see BENCHMARKS.md). Past
//     200k records it reads two halves in two read snapshots at once.
//   - A record that fails inside a batch (for example one too large for the
//     disk) fails the whole batch it was grouped with.
//   - Durability is what SQLite and the file system give with fsync; a disk
//     that lies about fsync loses committed records on power loss.
//
// # Portability
//
// The schema is described once, in migrations.go, and rendered for each
// engine (ddl.go): plain types, explicit keys, the few types the engines
// spell differently named once. The queries are in schema.go, the same
// text on both: $n placeholders, ON CONFLICT upserts, and the hash chain
// computed in Go, never in SQL. The schema each migration leaves on each
// engine is golden (testdata/schema).
//
// # PostgreSQL
//
// On PostgreSQL, "the file" above is the database: whoever can write it
// can rewrite the chain (the witness anchors it), and durability is the
// server's commit. The kill_switch setting is then the shared truth across
// machines (each machine's kill switch file still trips its own
// instances), and every call on every instance reads it (no cache: a
// change committed before a call began is seen by it). See SECURITY.md for the
// tests and the known limits.
package store
