package sources

import (
	"errors"
	"fmt"
)

// Sentinel errors. Refusals of agent requests are *violation.Error values
// instead (see the package doc); these are for configuration, manifests and
// lifecycle, the errors an operator sees.
var (
	// ErrInvalidPool reports a PoolConfig that fails [PoolConfig.Validate].
	ErrInvalidPool = errors.New("invalid pool config")
	// ErrDuplicatePool reports two configured pools with the same id.
	ErrDuplicatePool = errors.New("duplicate pool id")
	// ErrInvalidOptions reports an Options value with a negative limit.
	ErrInvalidOptions = errors.New("invalid sources options")
	// ErrInvalidContextID reports an empty or oversized context id in Bind.
	ErrInvalidContextID = errors.New("invalid context id")
	// ErrClosed reports use of a Registry after Close.
	ErrClosed = errors.New("source registry closed")

	// ErrManifestSyntax reports a manifest line that is not sha256sum output.
	ErrManifestSyntax = errors.New("malformed manifest line")
	// ErrManifestName reports a manifest file name that is not a canonical
	// relative path (absolute, "..", NUL, empty, too long, not clean).
	ErrManifestName = errors.New("bad file name in manifest")
	// ErrManifestDuplicate reports a file name listed twice.
	ErrManifestDuplicate = errors.New("duplicate file name in manifest")
	// ErrManifestTooLarge reports a manifest file over the size bound.
	ErrManifestTooLarge = errors.New("manifest file too large")
)

// ManifestError is a problem on one line of a manifest. errors.Is(err,
// ErrManifestSyntax) and friends work through Unwrap.
type ManifestError struct {
	Line int // 1-based
	Err  error
}

func (e *ManifestError) Error() string { return fmt.Sprintf("manifest line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause, one of the ErrManifest* sentinels (possibly wrapped).
func (e *ManifestError) Unwrap() error { return e.Err }
