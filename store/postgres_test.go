package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for raw access

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/contexts/contextstest"
	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// The PostgreSQL backend runs the same conformance suites as SQLite
// (contexts, declarations) and the same audit chain and tamper tests, on a
// real cluster (package pgtest). Two or three handles on one database
// stand in for instances on different machines.

func TestMain(m *testing.M) { pgtest.Main(m) }

// openPG opens a handle on dsn, closed at the end of the test.
func openPG(t testing.TB, dsn string, opts *store.Options) *store.DB {
	t.Helper()
	db, err := store.OpenPostgres(dsn, opts)
	return opened(t, "OpenPostgres", db, err)
}

// twoPG opens two handles on one PostgreSQL database, as two instances
// would; the test is skipped where there is no database.
func twoPG(t *testing.T) (*store.DB, *store.DB) {
	dsn := pgtest.DSN(t)
	return openPG(t, dsn, nil), openPG(t, dsn, nil)
}

// onPostgres runs a contract between two handles on one PostgreSQL
// database (the SQLite run is onSQLite's).
func onPostgres(t *testing.T, contract func(t *testing.T, a, b *store.DB)) {
	a, b := twoPG(t)
	contract(t, a, b)
}

// openPGRO opens a read-only handle on dsn, closed at the end of the test.
func openPGRO(t testing.TB, dsn string) *store.DB {
	t.Helper()
	db, err := store.OpenPostgresReadOnly(dsn)
	return opened(t, "OpenPostgresReadOnly", db, err)
}

// rawPG is a connection an attacker (or a DBA) with database access has.
func rawPG(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func TestPostgresMigrationsMirrorSQLite(t *testing.T) {
	sq, pg := store.MigrationNames(false), store.MigrationNames(true)
	if fmt.Sprint(sq) != fmt.Sprint(pg) {
		t.Fatalf("migrations differ:\nsqlite   %q\npostgres %q", sq, pg)
	}
}

func TestPostgresContextsConformance(t *testing.T) {
	contextstest.StoreConformance(t, func(t *testing.T) (contexts.Store, contexts.Store) {
		dsn := pgtest.DSN(t)
		return openPG(t, dsn, nil), openPG(t, dsn, nil)
	})
}

func TestPostgresDeclarationsConformance(t *testing.T) {
	declarationstest.StoreConformance(t, func(t *testing.T) declarations.Store {
		return openPG(t, pgtest.DSN(t), nil).Declarations()
	})
}

// TestPostgresAppendAcrossInstances: three instances append concurrently
// to one database; the chain is one contiguous, verifying sequence and
// every record names the instance that wrote it.
func TestPostgresAppendAcrossInstances(t *testing.T) {
	dsn := pgtest.DSN(t)
	const each = 150
	var dbs []*store.DB
	for i := range 3 {
		dbs = append(dbs, openPG(t, dsn, &store.Options{Instance: fmt.Sprintf("inst-%d", i)}))
	}
	var wg sync.WaitGroup
	for _, db := range dbs {
		wg.Go(func() { appendConcurrently(t, db, each, 6) })
	}
	wg.Wait()
	for _, db := range dbs {
		mustVerify(t, db, 3*each)
	}
	mustBeContiguous(t, dbs[0])
	counts := map[string]int{}
	dbs[1].Scan(context.Background(), 0, func(r *audit.Record) error {
		counts[r.Instance]++
		return nil
	})
	for i := range 3 {
		if n := counts[fmt.Sprintf("inst-%d", i)]; n != each {
			t.Errorf("instance %d wrote %d records, want %d (%v)", i, n, each, counts)
		}
	}
}

// TestPostgresRoundTrip: every field comes back exactly, including bytes
// PostgreSQL's TEXT would refuse (NUL, invalid UTF-8), and the instance.
func TestPostgresRoundTrip(t *testing.T) {
	db := openPG(t, pgtest.DSN(t), &store.Options{Instance: "serve.h.1.ab"})
	ctx := context.Background()
	for i, mod := range []func(r *audit.Record){
		func(r *audit.Record) {},
		func(r *audit.Record) { r.Reason, r.Error = "nul\x00inside", "bad \xff\xfe utf-8" },
		func(r *audit.Record) { r.Args = []byte(`{"a":"\u0000 \\ \u2028"}`) },
	} {
		rec := sample(i)
		mod(rec)
		want := *rec
		if err := db.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
		got, err := db.Tail(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		want.Seq, want.PrevHash, want.Hash, want.Instance = rec.Seq, rec.PrevHash, rec.Hash, "serve.h.1.ab"
		if d := sameRecord(&got[0], &want); d != "" {
			t.Fatalf("case %d: %s", i, d)
		}
	}
	mustVerify(t, db, 3)
}

func FuzzPostgresRecordHash(f *testing.F) {
	fuzzRecordHash(f, openPG(f, pgtest.DSN(f), &store.Options{Instance: "fuzz"}))
}

// pgChainTemplate builds a database holding records 1..10 and no open
// connection, for pgtest.Clone.
func pgChainTemplate(t *testing.T) string {
	dsn := pgtest.DSN(t)
	db, err := store.OpenPostgres(dsn, &store.Options{Instance: "tmpl"})
	writeTemplate(t, db, err)
	return dsn
}

// TestPostgresVerifyDetectsTampering runs the SQLite tamper and forgery
// tables against PostgreSQL: an edit, a delete, an insert or a reorder
// done with database access is reported at the same seq with the same
// problem.
func TestPostgresVerifyDetectsTampering(t *testing.T) {
	tmpl := pgChainTemplate(t)
	ctx := context.Background()
	check := func(t *testing.T, dsn string, stmts []stmt, firstBad int64, problem string) {
		raw := rawPG(t, dsn)
		for _, s := range stmts {
			if _, err := raw.Exec(s.sql, s.args...); err != nil {
				t.Fatalf("tamper: %v", err)
			}
		}
		raw.Close()
		res, err := openPGRO(t, dsn).Verify(ctx)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if res.OK || res.FirstBad != firstBad || !strings.Contains(res.Problem, problem) {
			t.Fatalf("Verify = %+v\nwant FirstBad %d, problem mentioning %q", res, firstBad, problem)
		}
	}
	for _, tt := range tamperSQL {
		t.Run("raw/"+tt.name, func(t *testing.T) {
			q := tt.pg
			if q == "" {
				q = dialectSQL(tt.sql, true)
			}
			check(t, pgtest.Clone(t, tmpl), []stmt{{sql: q}}, tt.firstBad, tt.problem)
		})
	}
	for _, tt := range forgeries {
		t.Run("forge/"+tt.name, func(t *testing.T) {
			dsn := pgtest.Clone(t, tmpl)
			ro, err := store.OpenPostgresReadOnly(dsn)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := ro.Tail(ctx, 10)
			ro.Close()
			if err != nil {
				t.Fatal(err)
			}
			mustVerifyDSN(t, dsn, 10)
			check(t, dsn, tt.forge(recs), tt.firstBad, tt.problem)
		})
	}
	t.Run("instance renamed", func(t *testing.T) {
		// Every record names the instance "tmpl" by its string id.
		check(t, pgtest.Clone(t, tmpl), []stmt{{sql: `UPDATE audit_strings SET value = convert_to('other', 'UTF8')
			WHERE value = convert_to('tmpl', 'UTF8')`}}, 1, "edited")
	})
}

func mustVerifyDSN(t *testing.T, dsn string, want int64) {
	t.Helper()
	mustVerify(t, openPGRO(t, dsn), want)
}

// TestPostgresVerifyWhileAppending: Verify's rows and head are one
// snapshot (REPEATABLE READ) while three instances append, so it never
// reports a false "deleted from the end".
func TestPostgresVerifyWhileAppending(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b, c := openPG(t, dsn, nil), openPG(t, dsn, nil), openPG(t, dsn, nil)
	verifyWhile(t, c, 300, func() {
		var wg sync.WaitGroup
		wg.Go(func() { appendConcurrently(t, a, 150, 4) })
		wg.Go(func() { appendConcurrently(t, b, 150, 4) })
		wg.Wait()
	})
}

// TestPostgresReadOnly: a read-only handle reads, refuses every write
// before touching the database, and its connections cannot write even if
// a bug sent them a write.
func TestPostgresReadOnly(t *testing.T) {
	dsn := pgtest.DSN(t)
	rw := openPG(t, dsn, nil)
	appendN(t, rw, 0, 3)
	ro := openPGRO(t, dsn)
	mustVerify(t, ro, 3)
	ctx := context.Background()
	if err := ro.Append(ctx, sample(9)); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Append: %v, want ErrReadOnly", err)
	}
	if err := ro.SetKillSwitch(ctx, true, "x", "y"); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("SetKillSwitch: %v, want ErrReadOnly", err)
	}
	if _, err := ro.Declarations().Transition(ctx, "d", nil, declarations.StateApproved, nil); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Transition: %v, want ErrReadOnly", err)
	}
	for name, call := range writeCalls(t, ro) {
		if err := call(ctx); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	if err := store.ReadPoolRefusesWrite(ro); err == nil {
		t.Error("read pool accepted a write")
	}
}

// TestPostgresSchemaTooNew: a database migrated by a newer program is
// refused, read-write and read-only.
func TestPostgresSchemaTooNew(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := openPG(t, dsn, nil)
	db.Close()
	if _, err := rawPG(t, dsn).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenPostgres(dsn, nil); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("OpenPostgres: %v, want ErrSchemaTooNew", err)
	}
	if _, err := store.OpenPostgresReadOnly(dsn); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("OpenPostgresReadOnly: %v, want ErrSchemaTooNew", err)
	}
}

// TestPostgresConcurrentFirstOpen: instances starting together on an empty
// database apply each migration once.
func TestPostgresConcurrentFirstOpen(t *testing.T) {
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := store.OpenPostgres(dsn, nil)
			if err == nil {
				err = db.Append(context.Background(), sample(1))
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n, max int64
	if err := rawPG(t, dsn).QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max {
		t.Fatalf("schema_migrations has %d rows up to version %d", n, max)
	}
	mustVerifyDSN(t, dsn, 4)
}

// TestPostgresKillSwitchAcrossInstances (issue 26 item 7): a switch
// engaged or released through one instance, by hand in the database, or
// with the settings trigger disabled (so no NOTIFY is sent) is seen by
// another instance's very next check: every check reads the row, so no
// cache, listener or wait stands between a committed change and the next
// call. No sleep, no deadline: the verdict is the next read's.
func TestPostgresKillSwitchAcrossInstances(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openPG(t, dsn, nil), openPG(t, dsn, nil)
	ctx := context.Background()
	raw := rawPG(t, dsn)
	for _, step := range []struct {
		what   string
		change func() error
		want   bool
	}{
		{"fresh", func() error { return nil }, false},
		{"engaged on another instance", func() error { return a.SetKillSwitch(ctx, true, "op", "incident") }, true},
		{"released on another instance", func() error { return a.SetKillSwitch(ctx, false, "op", "over") }, false},
		{"engaged by hand", func() error {
			_, err := raw.Exec(`UPDATE settings SET value = '1' WHERE name = 'kill_switch'`)
			return err
		}, true},
		{"released with the trigger disabled", func() error {
			_, err := raw.Exec(`ALTER TABLE settings DISABLE TRIGGER USER; UPDATE settings SET value = '0' WHERE name = 'kill_switch'`)
			return err
		}, false},
		{"engaged with the trigger disabled", func() error {
			_, err := raw.Exec(`UPDATE settings SET value = '1' WHERE name = 'kill_switch'`)
			return err
		}, true},
	} {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if on, err := b.KillSwitchEngaged(ctx); on != step.want || err != nil {
			t.Fatalf("%s: the next check says %v, %v; want %v", step.what, on, err, step.want)
		}
	}
}

// TestPostgresCollectOnce: two instances race to begin executing the same
// approved declaration, many times over; exactly one wins each race.
func TestPostgresCollectOnce(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openPG(t, dsn, nil).Declarations(), openPG(t, dsn, nil).Declarations()
	ctx := context.Background()
	for i := range 30 {
		id := fmt.Sprintf("d-%d", i)
		mustCreate(t, a, testDecl(id, "c1", declarations.StateApproved))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, st := range []declarations.Store{a, b, a, b} {
			wg.Go(func() {
				_, err := st.Transition(ctx, id, []declarations.State{declarations.StateApproved}, declarations.StateExecuting, nil)
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, declarations.ErrState):
					t.Errorf("Transition: %v", err)
				}
			})
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%s: %d transitions won, want exactly 1", id, n)
		}
	}
}
