package comm

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Query bounds.
const (
	DefaultMaxRows      = 500
	DefaultQueryTimeout = 10 * time.Second
	maxCellBytes        = 4096
	maxTableBytes       = 4 << 20  // all cells of one answer together
	maxValueBytes       = 16 << 20 // SQLITE_LIMIT_LENGTH: no randomblob(1e9)
	maxQueryConns       = 4
)

// Querier performs comm.query against one configured SQLite database,
// opened read-only. It is safe for concurrent use.
type Querier struct {
	db      *sql.DB
	path    string // absolute; redacted from every agent-visible message
	maxRows int
	timeout time.Duration
}

// Table is a query's answer. Cells are strings: NULL is "NULL", numbers in
// Go's shortest form, BLOBs that are not UTF-8 as x'hex' (cut), text with
// invalid UTF-8 repaired. Each cell is at most 4 KiB, the answer at most
// 4 MiB of cell text.
type Table struct {
	Columns        []string
	Rows           [][]string
	Truncated      bool // rows were left out: the row cap or the size budget was reached
	CellsTruncated bool // at least one cell was cut at 4 KiB
}

// OpenQuerier opens the SQLite database at path for reading only:
//
//   - mode=ro: the file is opened read-only (a missing file is an error,
//     never created) and every write fails with SQLITE_READONLY;
//   - query_only(1): writes are refused by SQLite even if the mode were
//     wrong;
//   - trusted_schema(0) and defensive mode: a hostile database file cannot
//     make its views or triggers call functions with side effects, or
//     corrupt itself through writable_schema;
//   - per query, SQLITE_LIMIT_ATTACHED is 0 (ATTACH, which could open or
//     create another file with a URI of its choosing, always fails) and
//     values are limited to 16 MiB;
//   - every connection compiles statements under SQLite's authorizer
//     (queryAuthorizer): reads of tables and views, functions and
//     recursion only — no pragma (pragma_database_list would name the
//     file's host path), no sqlite_dbpage or dbstat, no ATTACH, no
//     load_extension (ErrQueryRefused).
//
// The database is not opened immutable: another process may be writing it,
// and immutable would return wrong results then. maxRows ≤ 0 means 500;
// timeout ≤ 0 means 10 s. Errors here are for the operator and may name
// the path; errors from Query never do.
func OpenQuerier(path string, maxRows int, timeout time.Duration) (*Querier, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("comm: query database %q: %w", path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("comm: query database: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("comm: query database %q is not a regular file", abs)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_defensive", "1")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "trusted_schema(0)")
	q.Add("_pragma", "busy_timeout(2000)")
	// A file: URI, so SQLite honours mode=ro; the path is escaped so a
	// name holding '?' or '#' cannot smuggle in URI parameters.
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("comm: opening query database %q: %w", abs, err)
	}
	db := sql.OpenDB(authorizedConnector{base})
	db.SetMaxOpenConns(maxQueryConns)
	db.SetConnMaxIdleTime(time.Minute)
	qr := &Querier{db: db, path: abs, maxRows: maxRows, timeout: timeout}
	if qr.maxRows <= 0 {
		qr.maxRows = DefaultMaxRows
	}
	if qr.timeout <= 0 {
		qr.timeout = DefaultQueryTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("comm: opening query database %q: %w", abs, err)
	}
	return qr, nil
}

// Close closes the database.
func (q *Querier) Close() error { return q.db.Close() }

// Query runs one read-only statement (see checkSQL) and returns at most
// maxRows rows. The timeout interrupts SQLite mid-statement, so even a
// query that never ends (an unbounded recursive CTE) returns ErrTimeout
// (TestQueryTimeout).
func (q *Querier) Query(ctx context.Context, sqlText string) (*Table, error) {
	if err := checkSQL(sqlText); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	return q.run(ctx, sqlText)
}

// run executes without the lexical check; TestQueryConnectionIsReadOnly
// calls it directly to prove the connection refuses writes on its own.
func (q *Querier) run(ctx context.Context, sqlText string) (*Table, error) {
	conn, err := q.db.Conn(ctx)
	if err != nil {
		return nil, q.sqlErr(ctx, err)
	}
	defer conn.Close()
	for _, l := range []struct{ id, v int }{
		{sqlite3.SQLITE_LIMIT_ATTACHED, 0},
		{sqlite3.SQLITE_LIMIT_LENGTH, maxValueBytes},
		{sqlite3.SQLITE_LIMIT_SQL_LENGTH, maxSQLBytes},
	} {
		if _, err := sqlite.Limit(conn, l.id, l.v); err != nil {
			return nil, newErr("query", ErrUnavailable, "the database could not be prepared", err)
		}
	}
	// The connection already has the authorizer; this one also says what
	// it refused, for the agent (SQLite's own text is "not authorized").
	var refused string
	err = conn.Raw(func(dc any) error {
		return setAuthorizer(dc, func(what string) {
			if refused == "" {
				refused = what
			}
		})
	})
	if err != nil {
		return nil, newErr("query", ErrUnavailable, "the database could not be prepared", err)
	}
	fail := func(err error) error {
		if refused != "" {
			return newErr("query", ErrQueryRefused, cutUTF8(cleanText(refused, 120), 512), err)
		}
		return q.sqlErr(ctx, err)
	}
	rows, err := conn.QueryContext(ctx, sqlText)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fail(err)
	}
	t := &Table{Columns: make([]string, len(cols)), Rows: [][]string{}}
	for i, c := range cols {
		t.Columns[i], _ = cellString(c)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	budget := maxTableBytes
	for rows.Next() {
		if len(t.Rows) == q.maxRows || budget <= 0 {
			t.Truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fail(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			var cut bool
			row[i], cut = cellString(v)
			t.CellsTruncated = t.CellsTruncated || cut
			budget -= len(row[i])
		}
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return t, nil
}

// sqlErr classifies a driver error. SQLite's message is shown to the agent
// (it helps fix the query) with the database path redacted and its length
// bounded.
func (q *Querier) sqlErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return newErr("query", ErrTimeout, fmt.Sprintf("the query did not finish within %s", q.timeout), err)
		}
		return newErr("query", ErrUnavailable, "the query was canceled", err)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return newErr("query", ErrUnavailable, "the database could not be queried", err)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH, sqlite3.SQLITE_PERM:
		return newErr("query", ErrNotReadOnly, "the database is read-only", err)
	case sqlite3.SQLITE_INTERRUPT:
		return newErr("query", ErrTimeout, fmt.Sprintf("the query did not finish within %s", q.timeout), err)
	}
	msg := se.Error()
	for _, p := range []string{q.path, filepath.Dir(q.path)} {
		msg = strings.ReplaceAll(msg, p, "<database>")
	}
	return newErr("query", ErrInvalidQuery, cutUTF8(cleanText(msg, 300), 1024), err)
}

// cellString renders one value; cut reports a cell shortened to 4 KiB.
func cellString(v any) (s string, cut bool) {
	switch x := v.(type) {
	case nil:
		return "NULL", false
	case int64:
		return strconv.FormatInt(x, 10), false
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), false
	case bool:
		return strconv.FormatBool(x), false
	case time.Time:
		return x.Format(time.RFC3339Nano), false
	case string:
		s = x
	case []byte:
		if utf8.Valid(x) {
			s = string(x)
		} else {
			n := min(len(x), maxCellBytes/2-3)
			s, cut = "x'"+hex.EncodeToString(x[:n])+"'", n < len(x)
		}
	default:
		s = fmt.Sprint(x)
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxCellBytes {
		return cutUTF8(s, maxCellBytes-len("…")) + "…", true
	}
	return s, cut
}

// Text renders the table as tab-separated values with a header line.
// Backslash, tab, newline and carriage return inside cells are escaped
// (\\, \t, \n, \r) so every row is one line.
func (t *Table) Text() string {
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(tsvEscaper.Replace(c))
		}
		b.WriteByte('\n')
	}
	line(t.Columns)
	for _, r := range t.Rows {
		line(r)
	}
	if t.Truncated {
		fmt.Fprintf(&b, "(truncated: %d rows shown)\n", len(t.Rows))
	}
	return b.String()
}

var tsvEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
