// Package audit is the vocabulary of Airlock's audit trail: the [Record],
// its canonical encoding and hash ([Record.Canonical],
// [Record.ComputeHash]), the closed set of [Outcome]s, and one constructor
// per audited event kind. events.go lists them all, so a reviewer sees
// the whole vocabulary at once.
//
// # Invariants
//
//   - Every record the trail holds is built by a constructor of this
//     package ([Call] for a tool call, one per [Kind] for everything
//     else), never by hand.
//   - The canonical encoding of an existing record never changes: a chain
//     written by any earlier release still verifies. A new encoding gets
//     a new tag (canonical.go). The golden files in testdata pin the bytes
//     of every event kind; TestGolden fails on any change.
//   - The package is a leaf: it imports only the standard library and
//     internal/kit (TestLeaf), so the trail's readers (report, console,
//     export) need nothing of what wrote it.
//
// Writers reach the trail through [Appender], which the store implements;
// the store assigns the chain fields (seq, hashes, instance).
package audit
