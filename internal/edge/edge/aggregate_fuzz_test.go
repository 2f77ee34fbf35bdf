package edge

import (
	"testing"
	"time"
)

// FuzzAggregatorSequence drives one Aggregator through a sequence of
// refusals, clock moves and flushes decoded from the input (stateful
// fuzzing), and checks after every step what its documentation promises:
//
//   - every refusal is counted exactly once: the counts recorded so far
//     plus those still pending equal the refusals made, in all and per
//     code (the code is never rewritten);
//   - every record stands for at least one refusal, and is a refusal that
//     was made (or its overflow form: Remote and Principal "*", no Kind);
//   - at most maxKeys keys are kept, plus one overflow key per code;
//   - per key, a record written at once (the first of a window) is at
//     least a window after the previous one; a Refuse writes at most two
//     records (the old window's count, then the new first), a Flush at
//     most one per key;
//   - nothing is deferred past its window: a refusal that is not recorded
//     at once falls in a window whose first record was written less than
//     a window ago; after a Flush nothing is pending.
//
// The first input byte picks maxKeys (0-4, 0 unbounded); then each pair of
// bytes is one operation.
func FuzzAggregatorSequence(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 2, 0})
	f.Add([]byte{2, 0, 1, 0, 9, 0, 17, 0, 33, 2, 0, 1, 20, 0, 1, 2, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 1, 16, 0, 0, 2, 0, 1, 255, 2, 0})
	f.Add([]byte{3, 4, 7, 0, 0, 0, 0, 1, 15, 0, 0, 1, 1, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{4, 0, 64, 0, 65, 0, 66, 0, 67, 0, 68, 4, 64, 1, 33, 0, 64, 2, 0, 0, 69})
	remotes := []string{"10.0.0.1", "10.0.0.2", "2001:db8::1", "fe80::1%eth0", "192.0.2.7"}
	principals := []string{"anonymous", "alice", "iss|bob"}
	codes := []string{"UNAUTHENTICATED", "RATE_LIMITED", "ORIGIN_REFUSED"}
	kinds := []string{"", "no token"}
	const window = 10 * time.Second
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 2000 {
			return
		}
		maxKeys := int(data[0] % 5)
		data = data[1:]
		now := time.Unix(1_000_000, 0)
		type rec struct {
			r Refusal
			n int
		}
		var recs []rec
		a := NewAggregator(window, maxKeys, func(r Refusal, n int) { recs = append(recs, rec{r, n}) })
		a.now = func() time.Time { return now }

		made := map[Refusal]bool{}
		refused, recorded := 0, 0
		refusedBy, recordedBy := map[string]int{}, map[string]int{}
		codesSeen := map[string]bool{}
		lastFirst := map[aggKey]time.Time{} // when each key's last first-of-window record was written

		keyOf := func(r Refusal) aggKey { return aggKey{r.Remote, r.Principal, r.Code, r.Kind} }
		checkRecord := func(x rec) {
			t.Helper()
			if x.n < 1 {
				t.Fatalf("record %+v stands for %d refusals", x.r, x.n)
			}
			if x.r.Remote == Overflow {
				if x.r.Principal != Overflow || x.r.Kind != "" {
					t.Fatalf("overflow record keeps peer fields: %+v", x.r)
				}
				back := false
				for m := range made {
					if m.Code == x.r.Code && m.Transport == x.r.Transport && m.Reason == x.r.Reason {
						back = true
					}
				}
				if !back {
					t.Fatalf("overflow record %+v stands for no refusal made", x.r)
				}
			} else if !made[x.r] {
				t.Fatalf("record %+v is not a refusal that was made", x.r)
			}
			recorded += x.n
			recordedBy[x.r.Code] += x.n
		}
		invariants := func(step int) {
			t.Helper()
			pending, pendingBy := 0, map[string]int{}
			for k, e := range a.entries {
				pending += e.pending
				pendingBy[k.code] += e.pending
			}
			if recorded+pending != refused {
				t.Fatalf("step %d: %d refusals, %d recorded + %d pending", step, refused, recorded, pending)
			}
			for c := range codesSeen {
				if recordedBy[c]+pendingBy[c] != refusedBy[c] {
					t.Fatalf("step %d: code %s: %d refusals, %d recorded + %d pending", step, c, refusedBy[c], recordedBy[c], pendingBy[c])
				}
			}
			if maxKeys > 0 && len(a.entries) > maxKeys+len(codesSeen) {
				t.Fatalf("step %d: %d keys kept, bound %d + %d codes", step, len(a.entries), maxKeys, len(codesSeen))
			}
		}

		for step := 0; step+1 < len(data); step += 2 {
			op, arg := data[step], data[step+1]
			before := len(recs)
			switch op % 4 {
			case 0, 3: // a refusal
				r := Refusal{
					Transport: "streamable-http",
					Remote:    remotes[int(arg)%len(remotes)],
					Principal: principals[int(arg/5)%len(principals)],
					Code:      codes[int(arg/15)%len(codes)],
					Kind:      kinds[int(op/4)%len(kinds)],
					Reason:    "reason " + string('a'+rune(op/8%4)),
				}
				made[r] = true
				refused++
				refusedBy[r.Code]++
				codesSeen[r.Code] = true
				a.Refuse(r)
				out := recs[before:]
				if len(out) > 2 {
					t.Fatalf("step %d: one refusal wrote %d records", step, len(out))
				}
				ovf := Refusal{Transport: r.Transport, Remote: Overflow, Principal: Overflow, Code: r.Code, Reason: r.Reason}
				if len(out) == 0 {
					// Counted in a window whose first record is recent.
					k1, k2 := keyOf(r), keyOf(ovf)
					t1, ok1 := lastFirst[k1]
					t2, ok2 := lastFirst[k2]
					if !(ok1 && now.Sub(t1) < window) && !(ok2 && now.Sub(t2) < window) {
						t.Fatalf("step %d: refusal %+v not recorded, and no window of its key is open", step, r)
					}
				}
				for i, x := range out {
					checkRecord(x)
					if i == len(out)-1 {
						// The last one written is this refusal's, at once.
						if x.n != 1 || (x.r != r && x.r != ovf) {
							t.Fatalf("step %d: refusal %+v recorded as %+v ×%d", step, r, x.r, x.n)
						}
						k := keyOf(x.r)
						if p, ok := lastFirst[k]; ok && now.Sub(p) < window {
							t.Fatalf("step %d: key %+v recorded at once twice within a window (%v apart)", step, k, now.Sub(p))
						}
						lastFirst[k] = now
					}
				}
			case 1: // the clock moves (up to 16 windows), never back
				now = now.Add(time.Duration(arg) * window / 16)
			case 2:
				a.Flush()
				seen := map[aggKey]bool{}
				for _, x := range recs[before:] {
					checkRecord(x)
					k := keyOf(x.r)
					if seen[k] {
						t.Fatalf("step %d: one flush wrote two records for %+v", step, k)
					}
					seen[k] = true
				}
				for k, e := range a.entries {
					if e.pending != 0 {
						t.Fatalf("step %d: %d refusals of %+v still pending after a flush", step, e.pending, k)
					}
					if now.Sub(e.start) >= window {
						t.Fatalf("step %d: key %+v kept after its window ended", step, k)
					}
				}
			}
			invariants(step)
		}
		// The end of the run: a window later, one flush records everything.
		now = now.Add(window)
		before := len(recs)
		a.Flush()
		for _, x := range recs[before:] {
			checkRecord(x)
		}
		if recorded != refused || len(a.entries) != 0 {
			t.Fatalf("at the end: %d refusals, %d recorded, %d keys left", refused, recorded, len(a.entries))
		}
	})
}
