package store

import "errors"

// The store's sentinel errors. Every error a method returns for one of these
// conditions wraps the sentinel, so callers test with [errors.Is].
var (
	// ErrClosed is returned by every method called after [DB.Close].
	ErrClosed = errors.New("store is closed")

	// ErrUnavailable means the store could not durably write: the disk is
	// full, the file is locked past the busy timeout, the connection broke.
	// An Append that returns it did not commit its record, and the caller must
	// treat the call it was auditing as not allowed to proceed (fail closed).
	ErrUnavailable = errors.New("store unavailable")

	// ErrSchemaTooNew means the file was migrated by a newer Airlock than this
	// one; opening it would risk misreading or corrupting data it does not know.
	ErrSchemaTooNew = errors.New("store schema is newer than this program")

	// ErrSchemaTooOld means a read-only handle was asked to open a file
	// that must be migrated first (by a writable Open of this version).
	ErrSchemaTooOld = errors.New("store schema is older than this program reads without migrating")

	// ErrNotFound reports a missing store file or a missing named item.
	ErrNotFound = errors.New("not found")

	// ErrReadOnly is returned by writes through a handle from [OpenReadOnly].
	ErrReadOnly = errors.New("store is read-only")

	// ErrInvalidRecord reports a record Append refuses before it reaches the
	// writer: an unknown outcome, a time out of range, Args or Extra that are
	// not JSON. It is a caller bug, never a storage failure.
	ErrInvalidRecord = errors.New("invalid audit record")
)
