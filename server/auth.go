package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/config"
)

// ErrNoToken is returned when a configured token source is empty.
var ErrNoToken = errors.New("token source is empty")

// credential is one accepted bearer token, held only as its SHA-256 so the
// comparison is constant-time over fixed-length values and the token itself
// is not kept in memory longer than loading takes.
type credential struct {
	sum       [32]byte
	role      string
	principal string
}

type authenticator struct {
	creds     []credential
	anonymous string // role for requests without a token; "" = refuse
	warnings  []string
}

// MinTokenLength is the shortest token accepted without a warning: 32
// characters is 128 bits as hex, what `openssl rand -hex 16` prints.
const MinTokenLength = 32

// newAuthenticator loads every role's tokens. A token source whose variable
// or file is empty or missing is skipped (that credential cannot be used) —
// it never becomes "any token accepted".
func newAuthenticator(cfg *config.Config) (*authenticator, error) {
	a := &authenticator{anonymous: cfg.Transports.HTTP.AnonymousRole}
	for role, r := range cfg.Roles {
		for _, src := range r.Tokens {
			tok, name, err := readToken(src)
			if errors.Is(err, ErrNoToken) {
				a.warnings = append(a.warnings, fmt.Sprintf("role %s: token source %s is unset or empty: that credential cannot be used", role, name))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("role %s: %w", role, err)
			}
			if len(tok) < MinTokenLength {
				a.warnings = append(a.warnings, fmt.Sprintf("role %s: token from %s is %d characters; use at least %d random ones (openssl rand -hex 16)", role, name, len(tok), MinTokenLength))
			}
			a.creds = append(a.creds, credential{sum: sha256.Sum256([]byte(tok)), role: role, principal: role + "/" + name})
		}
	}
	return a, nil
}

func readToken(src config.TokenSource) (token, name string, err error) {
	if src.Env != "" {
		token, name = os.Getenv(src.Env), "env:"+src.Env
	} else {
		b, rerr := os.ReadFile(src.File)
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return "", "", fmt.Errorf("reading token file: %w", rerr)
		}
		token, name = strings.TrimRight(string(b), "\r\n"), "file:"+filepath.Base(src.File)
	}
	if strings.TrimSpace(token) == "" {
		return "", name, ErrNoToken
	}
	return token, name, nil
}

// warn logs what is wrong with the configured tokens (never a token).
func (a *authenticator) warn(log *slog.Logger) {
	for _, w := range a.warnings {
		log.Warn(w)
	}
}

// identify returns the identity for r's bearer token, or false.
func (a *authenticator) identify(r *http.Request) (identity, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		if h == "" && a.anonymous != "" {
			return identity{Principal: "anonymous", Role: a.anonymous}, true
		}
		return identity{}, false
	}
	sum := sha256.Sum256([]byte(tok))
	match := -1
	// Compare against every credential, always, so timing does not reveal
	// which (or whether an earlier) credential matched.
	for i := range a.creds {
		if subtle.ConstantTimeCompare(sum[:], a.creds[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return identity{}, false
	}
	return identity{Principal: a.creds[match].principal, Role: a.creds[match].role}, true
}
