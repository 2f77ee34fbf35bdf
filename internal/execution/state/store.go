// Package state is an Airlock installation's state directory: where its
// store, its witness (the audit chain's anchor outside the database), its
// kill switch file and its keys live, and the one place that opens them —
// for the runner (serve) and the operator's API (the CLI's commands and the
// console) alike, so both find the same store by the same rules.
//
// The invariant it keeps: a state directory's store is opened only here,
// and only the runner and the operator's API may import this package
// (TestOnlyRunnerReachesToolsAndStore): a *store.DB never reaches a package
// that may not write the audit trail. [Lent] hands a running engine's own
// store to the operator's API through a function of this package, not a
// method, for the same reason.
package state

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/store"
)

// DBFile is the store's file name inside the state directory.
const DBFile = "airlock.db"

// StoreEnv names the variable that selects the store for `airlock serve`
// and for every operator command: a postgres:// URL. It overrides the
// configuration's `store`; unset and unconfigured, the store is the SQLite
// file DBFile in the state directory.
const StoreEnv = "AIRLOCK_STORE"

// StoreLocation is where the store of stateDir lives: $AIRLOCK_STORE, then
// the configured store, then the SQLite file in stateDir.
func StoreLocation(configured, stateDir string) string {
	if v := os.Getenv(StoreEnv); v != "" {
		return v
	}
	if configured != "" {
		return configured
	}
	return filepath.Join(stateDir, DBFile)
}

// OpenStore opens the store at loc read-write: PostgreSQL for a
// postgres:// URL (config.IsPostgresURL, the rule the configuration's
// store is checked by), else the SQLite file.
func OpenStore(loc string, opts *store.Options) (*store.DB, error) {
	if config.IsPostgresURL(loc) {
		return store.OpenPostgres(loc, opts)
	}
	if err := checkNotURL(loc); err != nil {
		return nil, err
	}
	return store.Open(loc, opts)
}

// OpenStoreReadOnly opens the store at loc for reading only.
func OpenStoreReadOnly(loc string) (*store.DB, error) {
	if config.IsPostgresURL(loc) {
		return store.OpenPostgresReadOnly(loc)
	}
	if err := checkNotURL(loc); err != nil {
		return nil, err
	}
	return store.OpenReadOnly(loc)
}

// checkNotURL refuses an $AIRLOCK_STORE that looks like a URL of another
// database rather than creating a SQLite file named after it.
func checkNotURL(loc string) error {
	for i := 0; i < len(loc) && i < 16; i++ {
		if loc[i] == ':' && i+2 < len(loc) && loc[i+1] == '/' && loc[i+2] == '/' {
			return fmt.Errorf("store %q: only postgres:// URLs or a SQLite file path are supported", loc[:i+3])
		}
	}
	return nil
}
