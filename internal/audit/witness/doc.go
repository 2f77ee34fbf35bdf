// Package witness anchors the audit chain outside the database it lives in.
//
// The store's hash chain (package store) proves that records were not
// edited or reordered, but everything it needs to verify itself is in the
// same file: whoever can write that file can cut records off the end and fix
// the head row, delete every record, or put back an older copy of the file,
// and the chain still verifies. A [Checkpoint] — the chain's last seq and
// head hash, the kill-switch state, the time and the writing instance —
// signed with HMAC-SHA256 and appended to a file the database cannot roll
// back ([Log], O_APPEND plus fsync) turns each of those into a mismatch that
// [Check] reports.
//
// # Invariants
//
//   - Only a holder of the key writes a line that [Parse] accepts: every
//     line carries an HMAC over its own bytes. The key lives in its own file
//     ([LoadOrCreateKey]), never only in the database, so restoring the
//     database cannot change it.
//   - Lines are appended in head order. [Log.Checkpoint] holds an exclusive
//     flock on the witness file while it reads the chain head and appends,
//     so two processes (a server and the operator CLI) cannot write an older
//     head after a newer one; a seq that goes backwards in the file therefore
//     means the database went backwards ([ErrRolledBack]).
//   - Durable before return: Checkpoint returns nil only after fsync.
//   - The chain is reached through the [Chain] interface (head, and the hash
//     at a seq), so any store — SQLite today, PostgreSQL later — can be
//     anchored and an incremental verifier can start from a checkpoint.
//
// # Limits
//
//   - Records appended after the last checkpoint are not anchored: cutting
//     them off is not detected. [Checkpointer] bounds that window by a
//     number of records and a time, and writes a checkpoint at clean
//     shutdown.
//   - The witness is append-only by how it is written, not by force: a
//     process with write access to the witness file can truncate it, and one
//     that can also read the key can forge it. Put the file (or a mirror, see
//     [Options]) on storage the audited host cannot rewrite — a chattr +a
//     file, a separate mount, a log shipper — and the key where a backup
//     restore of the state directory does not reach.
//   - A torn last line (power loss during the append) is reported, like any
//     malformed line: the verifier cannot tell it from tampering.
package witness
