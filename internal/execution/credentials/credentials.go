package credentials

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/config"
)

// MinSecretBytes is the shortest secret accepted: a shorter one would
// match ordinary text when outputs are scrubbed for it.
const MinSecretBytes = 8

// maxSecretBytes bounds what is read from a secret file.
const maxSecretBytes = 16 << 10

// Errors a use can fail with; each is wrapped in an *Error naming the id.
var (
	// ErrRevoked: the secret's file is missing or empty, or its variable
	// is unset or empty.
	ErrRevoked = errors.New("credential revoked")
	// ErrInvalid: the secret is present but unusable (too short, control
	// characters, too long).
	ErrInvalid = errors.New("credential secret invalid")
)

// Error is a failed use of credential ID. Its text names the id and why,
// never the value.
type Error struct {
	ID     string
	Reason string // "file missing", "file empty", "variable unset", ...
	Err    error  // ErrRevoked or ErrInvalid
}

func (e *Error) Error() string {
	return fmt.Sprintf("credential %s: %s: %v", e.ID, e.Reason, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Change is a credential's state moving: revoked (Revoked true) or usable
// again. Reason never holds the value.
type Change struct {
	ID      string
	Revoked bool
	Reason  string
}

// Options configure a Set; nil means defaults.
type Options struct {
	// OnChange is told, once per transition, when a credential becomes
	// unusable or usable again (at a use or a Check). It may be called
	// from any goroutine and must not block for long.
	OnChange func(Change)
	// Getenv reads environment variables (os.Getenv).
	Getenv func(string) string
	// Exchanger gets the tokens of upstreams with a token_exchange
	// (ForUpstream); nil refuses their calls.
	Exchanger Exchanger
}

// Set is the configured credentials. Safe for concurrent use; Reload
// swaps the configuration under running calls.
type Set struct {
	creds     atomic.Pointer[[]config.Credential]
	onChange  func(Change)
	getenv    func(string) string
	exchanger Exchanger

	mu      sync.Mutex
	revoked map[string]bool // last state seen per id (absent: never read)
}

// New returns the Set of creds.
func New(creds []config.Credential, opts *Options) *Set {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Set{onChange: o.OnChange, getenv: o.Getenv, exchanger: o.Exchanger, revoked: map[string]bool{}}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	s.Reload(creds)
	return s
}

// Reload replaces the configuration; the next use reads the new one.
func (s *Set) Reload(creds []config.Credential) {
	c := slices.Clone(creds)
	s.creds.Store(&c)
}

// Configured reports whether any credential is configured.
func (s *Set) Configured() bool { return s != nil && len(*s.creds.Load()) > 0 }

// Check reads every credential once, so a file removed while nothing uses
// it is noticed (and its revocation reported) without waiting for a use.
func (s *Set) Check() {
	if s == nil {
		return
	}
	for _, c := range *s.creds.Load() {
		_, _ = s.read(c)
	}
}

// read returns c's secret, reporting a change of state.
func (s *Set) read(c config.Credential) (string, error) {
	v, reason, err := s.value(c)
	s.observe(c.ID, err != nil && errors.Is(err, ErrRevoked), reason)
	if err != nil {
		return "", &Error{ID: c.ID, Reason: reason, Err: err}
	}
	return v, nil
}

func (s *Set) value(c config.Credential) (v, reason string, err error) {
	if c.Secret.Env != "" {
		v = s.getenv(c.Secret.Env)
		if v == "" {
			return "", "variable " + c.Secret.Env + " unset or empty", ErrRevoked
		}
	} else {
		f, oerr := os.Open(c.Secret.File)
		if oerr != nil {
			if errors.Is(oerr, os.ErrNotExist) {
				return "", "file missing", ErrRevoked
			}
			return "", "file unreadable", ErrRevoked
		}
		b, rerr := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
		f.Close()
		switch {
		case rerr != nil:
			return "", "file unreadable", ErrRevoked
		case len(b) > maxSecretBytes:
			return "", "file larger than 16 KiB", ErrInvalid
		}
		v = strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", "file empty", ErrRevoked
		}
	}
	switch {
	case len(v) < MinSecretBytes:
		return "", fmt.Sprintf("shorter than %d bytes", MinSecretBytes), ErrInvalid
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		// A CR or LF in a header value would split the request (header
		// injection); in an environment variable it is merely odd, but
		// one rule for both is easier to audit.
		return "", "control characters", ErrInvalid
	}
	return v, "", nil
}

// observe records id's state and reports a transition. The first read
// of a usable credential is not a change; the first read of a revoked
// one is (it was configured to be usable).
func (s *Set) observe(id string, revoked bool, reason string) {
	s.mu.Lock()
	was, seen := s.revoked[id]
	s.revoked[id] = revoked
	s.mu.Unlock()
	if s.onChange == nil || (seen && was == revoked) || (!seen && !revoked) {
		return
	}
	if !revoked {
		reason = "secret present again"
	}
	s.onChange(Change{ID: id, Revoked: revoked, Reason: reason})
}

// Scrubber replaces the secrets a call injected, wherever they appear in
// what leaves the boundary, by [REDACTED:credential:<id>]. The zero value
// (and nil) scrubs nothing. Safe for concurrent use.
type Scrubber struct {
	mu   sync.Mutex
	used []secret
}

type secret struct {
	id     string
	values [][]byte // the raw secret and, for a header, its rendered value
}

// Marker is what a secret is replaced with.
func Marker(id string) string { return "[REDACTED:credential:" + id + "]" }

func (sc *Scrubber) add(id string, values ...string) {
	if sc == nil {
		return
	}
	s := secret{id: id}
	for _, v := range values {
		s.values = append(s.values, []byte(v))
	}
	// Longest first: the rendered header ("Bearer <secret>") before the
	// bare secret, so the marker replaces the whole of it.
	slices.SortFunc(s.values, func(a, b []byte) int { return len(b) - len(a) })
	sc.mu.Lock()
	sc.used = append(sc.used, s)
	sc.mu.Unlock()
}

func (sc *Scrubber) secrets() []secret {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return slices.Clone(sc.used)
}

// Used reports whether any secret was injected through sc.
func (sc *Scrubber) Used() bool { return len(sc.secrets()) > 0 }

// Bytes returns b with every injected secret replaced by its marker (b
// itself when none occurs).
func (sc *Scrubber) Bytes(b []byte) []byte {
	for _, s := range sc.secrets() {
		for _, v := range s.values {
			if bytes.Contains(b, v) {
				b = bytes.ReplaceAll(b, v, []byte(Marker(s.id)))
			}
		}
	}
	return b
}

// String is Bytes for a string.
func (sc *Scrubber) String(s string) string {
	if len(sc.secrets()) == 0 {
		return s
	}
	return string(sc.Bytes([]byte(s)))
}

// Find reports the id of the first injected secret that occurs in r
// (read in chunks, a secret split across two of them included), or "". It
// looks at the bytes as written and as the fence's sanitizer shows them:
// an output file holding the secret with U+200B or U+00AD between its
// letters would be re-formed by the fence of read_pool_file (issue 26,
// item 5). The sanitized view is taken a line at a time, as the sanitizer
// keeps no state across a newline (a line longer than maxSanitizedLine is
// taken in pieces).
func (sc *Scrubber) Find(r io.Reader) (string, error) {
	secrets := sc.secrets()
	if len(secrets) == 0 {
		return "", nil
	}
	raw, shown := &window{secrets: secrets}, &window{secrets: secrets}
	var line []byte // read, not yet sanitized
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.Read(chunk)
		eof := errors.Is(err, io.EOF)
		line = append(line, chunk[:n]...)
		cut := bytes.LastIndexByte(line, '\n') + 1
		switch {
		case eof:
			cut = len(line)
		case cut == 0 && len(line) > maxSanitizedLine:
			for cut = len(line); cut > 0 && !utf8.RuneStart(line[cut-1]); cut-- {
			}
			cut = max(cut-1, 1)
		}
		if id := raw.find(chunk[:n]); id != "" {
			return id, nil
		}
		if cut > 0 {
			clean, _ := fence.Sanitize(string(line[:cut]))
			if id := shown.find([]byte(clean)); id != "" {
				return id, nil
			}
			line = append(line[:0], line[cut:]...)
		}
		if eof {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}

// maxSanitizedLine bounds what Find holds of one line before it
// sanitizes a piece of it.
const maxSanitizedLine = 1 << 20

// window finds secrets in a stream of pieces, keeping the tail that could
// start a secret the next piece completes.
type window struct {
	secrets []secret
	buf     []byte
}

func (w *window) find(b []byte) string {
	w.buf = append(w.buf, b...)
	longest := 0
	for _, s := range w.secrets {
		for _, v := range s.values {
			if bytes.Contains(w.buf, v) {
				return s.id
			}
			longest = max(longest, len(v))
		}
	}
	if keep := longest - 1; len(w.buf) > keep {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-keep:]...)
	}
	return ""
}
