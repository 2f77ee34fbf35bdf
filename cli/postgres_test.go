package cli

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the attacker's raw access

	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// TestAuditVerifyPostgres: `airlock audit verify` with AIRLOCK_STORE naming
// a PostgreSQL database catches what it catches on SQLite — an edited, a
// deleted, an inserted and a reordered record, and a tail cut with the
// head fixed (the witness) — given only database access.
func TestAuditVerifyPostgres(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"edit", `UPDATE audit_records SET args = convert_to('{"nothing":"to see"}', 'UTF8') WHERE seq = 3`, "BROKEN at record 3: hash does not match"},
		{"delete", `DELETE FROM audit_records WHERE seq = 2`, "BROKEN at record 2: seq 2 missing"},
		{"insert", `UPDATE audit_records SET seq = seq + 100 WHERE seq >= 3; UPDATE audit_records SET seq = seq - 99 WHERE seq > 100;
			INSERT INTO audit_records SELECT 3, at, fields, convert_to('"forged"', 'UTF8'), extra, prev_hash, hash
			FROM audit_records WHERE seq = 2;
			UPDATE audit_head SET last_seq = last_seq + 1`, "BROKEN at record 3: prev_hash does not match"},
		{"reorder", `UPDATE audit_records SET seq = -3 WHERE seq = 3; UPDATE audit_records SET seq = 3 WHERE seq = 4;
			UPDATE audit_records SET seq = 4 WHERE seq = -3`, "BROKEN at record 3: prev_hash does not match"},
		{"cut the tail and fix the head", `DELETE FROM audit_records WHERE seq > 2;
			UPDATE audit_head SET last_seq = 2, last_hash = (SELECT encode(hash, 'hex') FROM audit_records WHERE seq = 2)`, "chain ends at seq 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			t.Setenv(statedir.StoreEnv, dsn)
			state := t.TempDir()
			drill(t, state, 2)
			if out := mustRun(t, "audit", "verify", "--state", state); !strings.Contains(out, "OK: 4 records") {
				t.Fatalf("before tampering: %s", out)
			}
			raw, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(tc.sql); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			mustBreak(t, state, tc.want)
		})
	}
}
