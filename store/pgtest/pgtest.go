// Package pgtest gives tests a real PostgreSQL database: a fresh, empty
// database per call of [DSN], on one throwaway cluster per test binary (or
// per `make test` run). It is imported by tests only; the architecture
// test keeps it out of every non-test package.
//
// Where the cluster comes from, in order:
//
//   - $AIRLOCK_TEST_PG, a DSN for a superuser on a running cluster. The
//     Makefile sets it: scripts/pg-test-cluster starts one cluster for the
//     whole `make test` run, so the test binaries share it.
//   - Otherwise [Main] starts one with scripts/pg-test-cluster (initdb and
//     pg_ctl from Debian's postgresql package, in a temporary directory, as
//     an unprivileged user when run as root) and stops it after m.Run.
//
// When neither works (the binaries are not installed), [DSN] skips the
// test with the reason — unless $CI is set, where a missing PostgreSQL
// fails the test instead: CI must run both backends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the cluster's superuser DSN.
const EnvDSN = "AIRLOCK_TEST_PG"

// The cluster of this test binary: started on first use by DSN, stopped
// by Main after m.Run.
var (
	mainCalled bool
	once       sync.Once
	adminDSN   string
	startErr   error
	stopDir    string
)

// Main runs the tests of a package that uses [DSN] and exits. The cluster
// is started on the first call of DSN (so a test binary that only
// re-executes itself as a helper process starts none) and stopped after
// m.Run.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with work of its own around m.Run: it returns
// m.Run's code after stopping the cluster.
func Run(m *testing.M) int {
	mainCalled = true
	code := m.Run()
	if stopDir != "" {
		exec.Command(scriptPath(), "stop", stopDir).Run()
	}
	return code
}

// start finds or starts the cluster, once.
func start() {
	if v := os.Getenv(EnvDSN); v != "" {
		adminDSN = v
		return
	}
	if !mainCalled {
		startErr = errors.New("no cluster: set " + EnvDSN + " or call pgtest.Main from TestMain")
		return
	}
	dir, err := os.MkdirTemp("", "airlock-pg.")
	if err != nil {
		startErr = err
		return
	}
	script := scriptPath()
	out, err := exec.Command(script, "start", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		startErr = fmt.Errorf("starting PostgreSQL with %s: %w", script, err)
		os.RemoveAll(dir)
		return
	}
	adminDSN, stopDir = strings.TrimSpace(string(out)), dir
}

// scriptPath is scripts/pg-test-cluster in this module's source tree.
func scriptPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "pg-test-cluster")
}

// Available reports whether a cluster is running for this test binary, and
// if not, why.
func Available() error {
	once.Do(start)
	return startErr
}

// DSN creates a new, empty database on the cluster and returns a DSN for
// it. The database is left for the cluster's removal at the end of the run:
// dropping it would wait for every connection the test leaked.
func DSN(t testing.TB) string {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required under CI: %v", err)
		}
		t.Skipf("PostgreSQL not available (install Debian's postgresql, or set %s): %v", EnvDSN, err)
	}
	return WithDatabase(adminDSN, createDatabase(t, ""))
}

// createDatabase creates a database with a fresh name, empty or copied
// from template, and returns its name.
func createDatabase(t testing.TB, template string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		t.Fatalf("pgtest: connecting to the cluster: %v", err)
	}
	defer conn.Close(ctx)
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	return name
}

// Clone returns a DSN for a new database copied from the one dsn names,
// which nobody may be connected to (CREATE DATABASE ... TEMPLATE): one
// prepared store copied per test case, as the SQLite tests copy a file.
func Clone(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := createDatabase(t, strings.TrimPrefix(u.Path, "/"))
	return WithDatabase(adminDSN, name)
}

// WithDatabase returns dsn (a postgres:// URL) naming database db instead.
func WithDatabase(dsn, db string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad DSN: %v", err))
	}
	u.Path = "/" + db
	return u.String()
}
