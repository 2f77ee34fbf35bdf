package runner

import (
	"context"
	"database/sql"
)

// rawLock is a second, independent SQLite connection to the store file,
// as another process (or an attacker) would open.
type rawLock struct {
	db   *sql.DB
	conn *sql.Conn
}

// open takes the write lock (BEGIN IMMEDIATE) and holds it until release.
func (l *rawLock) open(path string) (*rawLock, error) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(context.Background())
	if err == nil {
		_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &rawLock{db: db, conn: conn}, nil
}

func (l *rawLock) release() {
	l.conn.ExecContext(context.Background(), "ROLLBACK")
	l.conn.Close()
	l.db.Close()
}

// exec runs one statement on its own connection.
func (l *rawLock) exec(path, stmt string) (sql.Result, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Exec(stmt)
}
