package sources

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Trust is how far a pool's content may be believed. Untrusted content is
// fenced by the caller before it reaches the agent.
type Trust string

// The trust levels. The zero value of a PoolConfig's Trust means Untrusted:
// forgetting to say is the safe mistake.
const (
	Trusted   Trust = "trusted"
	Untrusted Trust = "untrusted"
)

// effective maps the empty value to Untrusted.
func (t Trust) effective() Trust {
	if t == Trusted {
		return Trusted
	}
	return Untrusted
}

// Bounds on configuration values.
const (
	// MaxPathLen bounds a file name, in bytes, in a manifest and in a read.
	MaxPathLen = 4096
	// maxDescriptionLen bounds a pool description, in bytes.
	maxDescriptionLen = 4096
	// maxIDLen is the longest pool id the id pattern admits.
	maxIDLen = 64
	// idPattern is the documented form of a pool id; validID implements it.
	idPattern = `^[a-z0-9][a-z0-9_.-]{0,63}$`
)

// DefaultManifestName is the manifest file looked for in a pool directory
// when PoolConfig.Manifest is empty.
const DefaultManifestName = "SHA256SUMS"

// PoolConfig is a pool as written in the YAML config file.
type PoolConfig struct {
	ID          string `json:"id" jsonschema:"description=Pool id the agent names in read_pool_file.,pattern=^[a-z0-9][a-z0-9_.-]{0\\,63}$"`
	Description string `json:"description" jsonschema:"description=What the pool holds; shown to the agent by list_pools.,maxLength=4096"`
	Path        string `json:"path" jsonschema:"description=Directory holding the pool's files. Relative paths are resolved against the config file's directory.,minLength=1"`
	Trust       Trust  `json:"trust,omitempty" jsonschema:"description=trusted or untrusted (the default). Untrusted content is fenced before the agent sees it.,enum=trusted,enum=untrusted"`
	Manifest    string `json:"manifest,omitempty" jsonschema:"description=SHA-256 manifest in sha256sum format. Default SHA256SUMS inside the pool directory; a relative path is relative to (and must stay inside) the pool directory."`
	// Readers is who may see the pool's content (readers.go); nil is
	// public. It is carried into the provenance labels of its pages.
	Readers []string `json:"readers,omitempty" jsonschema:"description=Who may see this pool's content (principals\\, e-mail addresses or handles; free strings). Labels of its pages carry them so a policy can refuse to send the content to anyone else (provenance.NAME.readers\\, readable_by). Absent means public.,minItems=1,maxItems=64,minLength=1,maxLength=256"`
}

// Validate checks the config without touching the disk and reports every
// problem found, each wrapping ErrInvalidPool.
func (c PoolConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("pool %q: "+format+": %w", append(append([]any{c.ID}, args...), ErrInvalidPool)...))
	}
	if !validID(c.ID) {
		bad("id must match %s", idPattern)
	}
	if len(c.Description) > maxDescriptionLen {
		bad("description longer than %d bytes", maxDescriptionLen)
	}
	switch {
	case c.Path == "":
		bad("path is empty")
	case strings.ContainsRune(c.Path, 0):
		bad("path contains NUL")
	}
	if c.Trust != "" && c.Trust != Trusted && c.Trust != Untrusted {
		bad("trust %q is neither %q nor %q", c.Trust, Trusted, Untrusted)
	}
	switch m := c.Manifest; {
	case m == "" || filepath.IsAbs(m):
	case strings.ContainsRune(m, 0):
		bad("manifest path contains NUL")
	case !filepath.IsLocal(m):
		// A relative manifest is opened through the pool's os.Root, so it
		// could not escape anyway; saying so here gives a clearer error.
		bad("relative manifest path %q leaves the pool directory", m)
	}
	if len(c.Readers) > MaxReaders {
		bad("more than %d readers", MaxReaders)
	}
	for i, r := range c.Readers {
		if err := CheckReader(r); err != nil {
			bad("readers[%d]: %v", i, err)
		}
	}
	return errors.Join(errs...)
}

// validID reports whether id matches idPattern.
func validID(id string) bool {
	if len(id) == 0 || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		case i > 0 && (b == '_' || b == '.' || b == '-'):
		default:
			return false
		}
	}
	return true
}
