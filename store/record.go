package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// timeLayout is how times are stored: fixed width, so the text sorts in time
// order, and exact to the microsecond, so it round-trips.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// minTime and maxTime bound the times timeLayout can write and read back.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// normalize sets the fields Append owns on the caller's behalf and rejects a
// record that could not be stored and read back exactly.
func normalize(r *audit.Record, now time.Time) error {
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	if r.Time.Before(minTime) || r.Time.After(maxTime) {
		return fmt.Errorf("%w: time %v outside years 1-9999", ErrInvalidRecord, r.Time)
	}
	if !r.Outcome.Valid() {
		return fmt.Errorf("%w: unknown outcome %q", ErrInvalidRecord, r.Outcome)
	}
	// Args and Extra must be JSON so that an export (json.Marshal of the
	// record) cannot fail on them later.
	if len(r.Args) > 0 && !json.Valid(r.Args) {
		return fmt.Errorf("%w: args are not valid JSON", ErrInvalidRecord)
	}
	if len(r.Extra) > 0 && !json.Valid(r.Extra) {
		return fmt.Errorf("%w: extra is not valid JSON", ErrInvalidRecord)
	}
	return nil
}
