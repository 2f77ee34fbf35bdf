package provenance

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzing reports whether this binary is fuzzing (-test.fuzz): only then
// is a slow input the finding. In a plain run over the seeds the time is
// the machine's load, not the input's (issue 26 item 7).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// FuzzTrace: Trace never panics, is deterministic, stays fast on hostile
// input, and a value copied verbatim from an untrusted source is found.
func FuzzTrace(f *testing.F) {
	f.Add(bill.Text, attackIBAN, "x")
	f.Add("pay %2555S13 &#85; \u0430\u200b", "%55S13", "1,000.50")
	f.Add(strings.Repeat("a", 5000), strings.Repeat("a", 300), strings.Repeat("a ", 200))
	f.Add(strings.Repeat("1,", 3000), "2024-01-04", "#general")
	f.Add(strings.Repeat("\ufdfa", 500), "\ufdfa\ufdfa", "ab")
	f.Fuzz(func(t *testing.T, src, v1, v2 string) {
		sources := []Source{task, {ID: "u", Integrity: Untrusted, Readers: []string{"r"}, Text: src}}
		opt := &Options{MaxIndexBytes: 8 << 10} // small, so minimization stays quick
		args := map[string]any{"a": v1, "b": []any{v2, 12.5}, "c": src}
		start := time.Now()
		ix := NewIndex(sources, opt)
		out := ix.Trace(args)
		if d := time.Since(start); fuzzing() && d > 2*time.Second {
			t.Fatalf("slow: %v", d)
		}
		if again := NewIndex(sources, opt).Trace(args); !reflect.DeepEqual(out, again) {
			t.Fatalf("not deterministic:\n%+v\n%+v", out, again)
		}
		for _, a := range out {
			if (a.Integrity == Trusted) != (a.Origin == OriginTrusted) {
				t.Fatalf("integrity %s with origin %s", a.Integrity, a.Origin)
			}
			if len(a.Matches) > defaultMaxMatches {
				t.Fatalf("%d matches", len(a.Matches))
			}
		}
		// "/c" is the untrusted source itself, copied verbatim.
		c := out[len(out)-1]
		if cs, _ := compact(Skeleton(src)); c.Path == "/c" && len(src) <= defaultMaxValueBytes && len(cs) >= minCompactWords &&
			c.Origin == OriginAgent {
			t.Fatalf("verbatim copy of the untrusted source not found: %+v", c)
		}
	})
}

// FuzzNormalize: no panic; the key of a key is the key (idempotent) for the
// kinds whose key is itself a value of the kind.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{taskIBAN, attackMail, "https://" + attackLink, "+44 20 7946 0958",
		"$1,000.50", "March 15, 2024", "#general", "Report.PDF", "%zz", "1.2.3"} {
		f.Add(s)
	}
	kinds := []Kind{KindIBAN, KindEmail, KindURL, KindHost, KindPhone, KindAmount, KindDate, KindHandle, KindFile, KindIdentifier, KindText}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range kinds {
			key, ok := Normalize(k, s)
			if !ok {
				continue
			}
			switch k {
			case KindIBAN, KindEmail, KindPhone, KindAmount, KindDate, KindHandle, KindIdentifier, KindText:
				if again, ok2 := Normalize(k, key); !ok2 || again != key {
					t.Fatalf("%s: Normalize(%q) = %q, again %q %v", k, s, key, again, ok2)
				}
			}
		}
	})
}

// FuzzSkeleton: no panic, output no longer than a bounded expansion of the
// input, and idempotent on its own output's compact form.
func FuzzSkeleton(f *testing.F) {
	f.Add("U\u200bS13 %2555 &#65; \uff21 \u0430")
	f.Add("hxxp[.]")
	f.Fuzz(func(t *testing.T, s string) {
		k := Skeleton(s)
		if len(k) > 18*4*len(s)+8 {
			t.Fatalf("expansion %d -> %d", len(s), len(k))
		}
		// The compact skeleton is a fixed point (defanging aside: "hX Xp"
		// compacts to "hxxp", which a second pass reads as "http").
		c1, _ := compact(k)
		c2, _ := compact(Skeleton(c1))
		if c1 != c2 && !strings.Contains(c1, "hxxp") {
			t.Fatalf("compact skeleton not stable: %q -> %q -> %q", s, c1, c2)
		}
	})
}
