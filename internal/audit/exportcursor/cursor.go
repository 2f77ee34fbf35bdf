// Package exportcursor is the resume point of `airlock audit export
// --cursor FILE`: a small file holding the sequence number of the next
// audit record to export, replaced atomically (temporary file, fsync,
// rename, fsync of the directory) so that after a crash it holds either
// the old or the new value, never a torn one.
//
// The file is one line, "next_seq N" with N ≥ 1 in decimal. [Parse] is
// strict — anything else (an empty or truncated file, a sign, spaces,
// leading zeros, a number past int64) is [ErrMalformed], never a guess: a
// wrong cursor would silently skip or repeat records in a SIEM.
//
// Limits: the exporter saves the cursor after it has flushed a batch to
// its output. Killed (SIGKILL, power loss) between the two, a restart
// repeats that batch — records carry their seq, so a consumer can drop
// the repeats; stopped by SIGINT or SIGTERM it saves the cursor first and
// a restart repeats nothing.
package exportcursor

import (
	"errors"
	"fmt"
	"github.com/airlock-dev/airlock/internal/kit/atomicfile"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ErrMalformed: the cursor file is not one "next_seq N" line.
var ErrMalformed = errors.New("malformed export cursor")

const prefix = "next_seq "

// Parse reads a cursor file's content and returns the next seq.
func Parse(b []byte) (int64, error) {
	s, ok := strings.CutPrefix(string(b), prefix)
	if !ok {
		return 0, fmt.Errorf("want %q and a number: %w", prefix, ErrMalformed)
	}
	s, ok = strings.CutSuffix(s, "\n")
	if !ok || s == "" || len(s) > 19 || s[0] == '0' || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("want one line %q with N ≥ 1: %w", prefix+"N", ErrMalformed)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return n, nil
}

// Format is the file content for next.
func Format(next int64) []byte { return []byte(prefix + strconv.FormatInt(next, 10) + "\n") }

// Load reads the cursor at path; found is false when there is no file yet.
func Load(path string) (next int64, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading export cursor: %w", err)
	}
	if len(b) > 64 {
		return 0, false, fmt.Errorf("export cursor %s: %d bytes: %w", path, len(b), ErrMalformed)
	}
	next, err = Parse(b)
	if err != nil {
		return 0, false, fmt.Errorf("export cursor %s: %w", path, err)
	}
	return next, true, nil
}

// Save replaces the cursor at path with next, atomically and durably.
func Save(path string, next int64) error {
	if next < 1 {
		return fmt.Errorf("saving export cursor %d: %w", next, ErrMalformed)
	}
	if err := atomicfile.Write(path, Format(next), 0o600); err != nil {
		return fmt.Errorf("saving export cursor: %w", err)
	}
	return nil
}
