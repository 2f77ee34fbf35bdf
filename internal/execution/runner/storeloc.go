package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/store"
)

// StoreEnv names the variable that selects the store for `airlock serve`
// and for every operator command: a postgres:// URL. It overrides the
// configuration's `store`; unset and unconfigured, the store is the SQLite
// file DBFile in the state directory.
const StoreEnv = "AIRLOCK_STORE"

// storeLocation is where the store of stateDir lives: $AIRLOCK_STORE, then
// the configured store, then the SQLite file in stateDir.
func storeLocation(configured, stateDir string) string {
	if v := os.Getenv(StoreEnv); v != "" {
		return v
	}
	if configured != "" {
		return configured
	}
	return filepath.Join(stateDir, DBFile)
}

// openStore opens the store at loc read-write: PostgreSQL for a
// postgres:// URL, else the SQLite file.
func openStore(loc string, opts *store.Options) (*store.DB, error) {
	if store.IsPostgres(loc) {
		return store.OpenPostgres(loc, opts)
	}
	if err := checkNotURL(loc); err != nil {
		return nil, err
	}
	return store.Open(loc, opts)
}

// openStoreReadOnly opens the store at loc for reading only.
func openStoreReadOnly(loc string) (*store.DB, error) {
	if store.IsPostgres(loc) {
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
