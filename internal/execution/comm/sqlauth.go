package comm

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
)

// queryAuthorizer is what SQLite's authorizer lets a comm.query statement
// do while it is compiled: read the tables and views of the database,
// call functions, recurse — nothing else. It runs on every physical
// connection of a [Querier] (authorizedConnector) and again per query
// (Querier.run), where it also names what it refused.
//
// It is an allow-list of actions, so an action SQLite adds later is
// refused, and it sees the names SQLite resolved, so no spelling of a
// name (quoted, bracketed, schema-qualified, inside a view) gets past it.
// What it refuses, and the attack each refusal blocks:
//
//   - SQLITE_PRAGMA, and reading any pragma_* table-valued function:
//     pragma_database_list (and PRAGMA database_list) return the host
//     path of the database file; other pragmas reveal compile options,
//     the schema's internals or change the connection (issue 26 item 10).
//   - reading sqlite_dbpage and dbstat: raw pages of the file (including
//     the unallocated space where deleted rows linger) and its layout.
//   - SQLITE_ATTACH / SQLITE_DETACH: opening (or creating) another file
//     by a path of the query's choosing.
//   - load_extension and fts3_tokenizer: loading native code, reading or
//     planting a function pointer.
//   - every write, schema change, transaction and savepoint (the
//     connection is read-only anyway: mode=ro and query_only).
//
// Reading the schema is allowed — sqlite_schema (sqlite_master) and the
// schemaPragmas' table-valued functions (pragma_table_info('t'), …): the
// agent needs it to write a query, and it holds no host path.
func queryAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) (ok bool, what string) {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive:
		return true, ""
	case sqlite.AuthRead:
		if refusedTable(arg1) {
			return false, "reading " + arg1
		}
		return true, ""
	case sqlite.AuthFunction:
		switch strings.ToLower(arg2) {
		case "load_extension", "fts3_tokenizer":
			return false, "the function " + arg2
		}
		return true, ""
	case sqlite.AuthPragma:
		if schemaPragmas[strings.ToLower(arg1)] {
			return true, ""
		}
		return false, "PRAGMA " + arg1
	case sqlite.AuthAttach:
		return false, "ATTACH"
	case sqlite.AuthDetach:
		return false, "DETACH"
	}
	return false, fmt.Sprintf("SQLite action %d (writes, schema changes and transactions)", action)
}

// schemaPragmas describe the schema only; a query may call them as
// table-valued functions (a PRAGMA statement is refused by checkSQL).
var schemaPragmas = map[string]bool{"table_info": true, "table_xinfo": true, "index_list": true,
	"index_info": true, "index_xinfo": true, "foreign_key_list": true}

// refusedTable reports whether name is one of the eponymous virtual
// tables a query may not read (see queryAuthorizer).
func refusedTable(name string) bool {
	n := strings.ToLower(name)
	if p, ok := strings.CutPrefix(n, "pragma_"); ok {
		return !schemaPragmas[p]
	}
	return n == "sqlite_dbpage" || n == "dbstat"
}

// authorizerFn adapts queryAuthorizer to the driver, calling deny with
// what was refused (nil: nobody is told).
func authorizerFn(deny func(what string)) sqlite.AuthorizerFn {
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, db, view string) sqlite.AuthorizerReturnCode {
		ok, what := queryAuthorizer(action, arg1, arg2, db, view)
		if ok {
			return sqlite.AuthorizerOK
		}
		if deny != nil {
			deny(what)
		}
		return sqlite.AuthorizerDeny
	}
}

// errNoAuthorizer: the driver's connection cannot take an authorizer, so
// it is not used (fail closed).
var errNoAuthorizer = errors.New("the SQLite driver offers no authorizer")

// setAuthorizer installs the authorizer on a driver connection.
func setAuthorizer(dc any, deny func(what string)) error {
	reg, ok := dc.(sqlite.AuthorizerRegisterer)
	if !ok {
		return errNoAuthorizer
	}
	return reg.RegisterAuthorizer(authorizerFn(deny))
}

// authorizedConnector opens the querier's physical connections with the
// authorizer already installed, so no statement on any of them — the
// driver's own PRAGMAs from the DSN ran before it, at open — is compiled
// without it.
type authorizedConnector struct{ driver.Connector }

func (c authorizedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := setAuthorizer(dc, nil); err != nil {
		dc.Close()
		return nil, err
	}
	return dc, nil
}
