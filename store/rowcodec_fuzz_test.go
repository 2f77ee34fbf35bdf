package store

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// FuzzUnpackFields: the fields column is read from a file anyone with
// write access may have edited, so its decoder must refuse garbage without
// panicking, and whatever it accepts must survive a round trip.
func FuzzUnpackFields(f *testing.F) {
	r := demoRecord(7)
	r.Truncated = true
	var ids [numStrings]int64
	for i := range ids {
		ids[i] = int64(i * 300)
	}
	f.Add(packFields(nil, &ids, r))
	f.Add([]byte{})
	f.Add([]byte{0xff})
	f.Add(make([]byte, numStrings+3))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ids [numStrings]int64
		var rec audit.Record
		if err := unpackFields(b, &ids, &rec); err != nil {
			return
		}
		again := packFields(nil, &ids, &rec)
		var ids2 [numStrings]int64
		var rec2 audit.Record
		if err := unpackFields(again, &ids2, &rec2); err != nil {
			t.Fatalf("re-packed fields do not decode: %v", err)
		}
		if ids2 != ids || rec2.DurationMicros != rec.DurationMicros || rec2.OutputBytes != rec.OutputBytes || rec2.Truncated != rec.Truncated {
			t.Fatalf("round trip changed %v %+v into %v %+v", ids, rec, ids2, rec2)
		}
		for _, id := range ids {
			if id < 0 {
				t.Fatalf("negative id %d accepted", id)
			}
		}
	})
}
