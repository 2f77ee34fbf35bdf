package config

import (
	"fmt"
	"net/url"
	"strings"
)

// IsPostgresURL reports whether s is a postgres:// or postgresql:// URL,
// the form `store` takes for the PostgreSQL backend.
func IsPostgresURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// checkStore accepts an empty store (SQLite in the state directory) or a
// postgres:// URL without a password: a configuration file is shared and
// committed, a database password is not (it belongs in PGPASSWORD or a
// .pgpass file, which the driver reads).
func (c *Config) checkStore() error {
	if c.Store == "" {
		return nil
	}
	if !IsPostgresURL(c.Store) {
		return c.at("$.store", fmt.Errorf("want a postgres:// URL (the SQLite store needs no setting): %w", ErrInvalid))
	}
	u, err := url.Parse(c.Store)
	if err != nil {
		// The parse error would echo the URL; say where, not what.
		return c.at("$.store", fmt.Errorf("not a valid URL: %w", ErrInvalid))
	}
	if _, has := u.User.Password(); has || u.Query().Has("password") {
		return c.at("$.store", fmt.Errorf("holds a password; use PGPASSWORD or a .pgpass file instead: %w", ErrInvalid))
	}
	return nil
}
