package capability

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"pool.read", true},
		{"pool.*", true},
		{"*", true},
		{"pipeline.run:report_*", true},
		{"pipeline.run:*-daily", true},
		{"", false},
		{"comm.**", false},
		{"comm.?", false},
		{"comm.[ab]", false},
		{"comm fetch", false},
		{" comm.fetch", false},
		{"comm.fetch\n", false},
		{"pool/read", false},
		{strings.Repeat("a", MaxLen+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("Parse(%q) err = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v is not ErrInvalid", err)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, id string
		want    bool
	}{
		{"pool.read", "pool.read", true},
		{"pool.read", "pool.reads", false},
		{"pool.read", "pool.rea", false},
		{"pool.*", "pool.read", true},
		{"pool.*", "pool.", true},
		{"pool.*", "pool", false},
		{"pool.*", "poolx.read", false},
		{"*", "", true},
		{"*", "anything:at.all", true},
		{"*.read", "pool.read", true},
		{"*.read", "pool.reads", false},
		{"comm.*", "comm.fetch", true},
		{"comm.*", "communicate", false},
		{"pipeline.run:*", "pipeline.run:report", true},
		{"pipeline.run:report_*", "pipeline.run:report_daily", true},
		{"pipeline.run:report_*", "pipeline.run:danger_report_x", false},
		{"pipeline.run:*_x", "pipeline.run:a_x", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcb", false},
		{"ab*ba", "aba", false}, // prefix and suffix may not overlap
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"*b*", "abc", true},
		{"*b*", "ac", false},
	}
	for _, tc := range tests {
		t.Run(tc.pat+"~"+tc.id, func(t *testing.T) {
			if got := MustParse(tc.pat).Match(tc.id); got != tc.want {
				t.Fatalf("%q.Match(%q) = %v, want %v", tc.pat, tc.id, got, tc.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"comm.*", "comm.fetch", true},
		{"comm.*", "comm.*", true},
		{"comm.*", "comm.f*", true},
		{"comm.f*", "comm.*", false},
		{"comm.fetch", "comm.*", false},
		{"comm.fetch", "comm.fetch", true},
		{"*", "anything.*", true},
		{"*", "*", true},
		{"pool.*", "*", false},
		{"pipeline.run:*", "pipeline.run:report_*", true},
		{"pipeline.run:report_*", "pipeline.run:*", false},
		{"pipeline.run:report_*", "pipeline.run:report_daily", true},
		{"pipeline.run:report_*", "pipeline.run:danger_*", false},
		{"*.read", "pool.*", false},
		{"*.read", "pool.read", true},
		{"*.read", "*.read", true},
		{"*.read", "*x.read", true},
		{"a*c", "a*b*c", true},
		{"a*b*c", "a*c", false},
		{"pool.*", "pool", false},
	}
	for _, tc := range tests {
		t.Run(tc.p+"⊇"+tc.q, func(t *testing.T) {
			if got := MustParse(tc.p).Covers(MustParse(tc.q)); got != tc.want {
				t.Fatalf("%q.Covers(%q) = %v, want %v", tc.p, tc.q, got, tc.want)
			}
		})
	}
}

// TestCoversSound checks the property the inheritance check relies on: if p
// covers q then every id built from q by filling its stars is matched by p.
func TestCoversSound(t *testing.T) {
	pats := []string{"*", "a*", "*a", "a*b", "*.*", "a.*", "a.b", "*b*", "a*a", "ab*ba", "p.r:*", "p.r:x_*", "x*y*z"}
	fills := []string{"", "a", "b", ".", "ab", "ba", "x", "zz", "a.b", "y"}
	for _, ps := range pats {
		for _, qs := range pats {
			p, q := MustParse(ps), MustParse(qs)
			if !p.Covers(q) {
				continue
			}
			for _, f := range fills {
				id := strings.ReplaceAll(qs, "*", f)
				if !p.Match(id) {
					t.Errorf("%q covers %q but does not match %q", ps, qs, id)
				}
			}
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	p := MustParse("pipeline.run:report_*_v*")
	if n := testing.AllocsPerRun(100, func() { p.Match("pipeline.run:report_daily_v2") }); n != 0 {
		t.Fatalf("Match allocates %v times", n)
	}
}

func FuzzCovers(f *testing.F) {
	f.Add("comm.*", "comm.f*", "x")
	f.Add("a*b", "a*xb", "")
	f.Fuzz(func(t *testing.T, ps, qs, fill string) {
		p, err1 := Parse(ps)
		q, err2 := Parse(qs)
		if err1 != nil || err2 != nil {
			return
		}
		if p.Covers(q) {
			if id := strings.ReplaceAll(qs, "*", fill); !p.Match(id) {
				t.Fatalf("%q covers %q but does not match %q", ps, qs, id)
			}
		}
	})
}

// TestOverlaps: Overlaps agrees with the existence of an id that both
// patterns match, checked against a brute force over short ids.
func TestOverlaps(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"comm.fetch", "comm.fetch", true},
		{"comm.fetch", "comm.*", true},
		{"comm.*", "pool.*", false},
		{"pool.*", "*", true},
		{"pipeline.run:*", "pipeline.run:danger_*", true},
		{"pipeline.run:report_*", "pipeline.run:danger_*", false},
		{"*x", "y*", true},
		{"a*b", "a*c", false},
		{"*.fetch", "comm.*", true},
		{"mcp.up.*", "mcp.*.echo", true},
		{"mcp.up.*", "mcp.down.*", false},
		{"comm.fetch", "comm.fetchx", false},
	}
	for _, tt := range tests {
		p, q := MustParse(tt.p), MustParse(tt.q)
		if got := p.Overlaps(q); got != tt.want {
			t.Errorf("%q.Overlaps(%q) = %v, want %v", tt.p, tt.q, got, tt.want)
		}
		if got := q.Overlaps(p); got != tt.want {
			t.Errorf("%q.Overlaps(%q) = %v, want %v (not symmetric)", tt.q, tt.p, got, tt.want)
		}
	}
	// Brute force: every pattern of up to 3 bytes over a, b, '.' and '*'
	// against every id of up to 6 bytes over a, b and '.' — long enough
	// for any witness two such patterns can have (a star need only spell
	// the other's literal bytes).
	var pats, ids []string
	var gen func(s, alpha string, n int, out *[]string)
	gen = func(s, alpha string, n int, out *[]string) {
		*out = append(*out, s)
		if len(s) < n {
			for _, c := range alpha {
				gen(s+string(c), alpha, n, out)
			}
		}
	}
	gen("", "ab.*", 3, &pats)
	gen("", "ab.", 6, &ids)
	for _, a := range pats {
		for _, b := range pats {
			if a == "" || b == "" || strings.Contains(a, "**") || strings.Contains(b, "**") {
				continue
			}
			pa, pb := MustParse(a), MustParse(b)
			want := false
			for _, id := range ids {
				if pa.Match(id) && pb.Match(id) {
					want = true
					break
				}
			}
			if got := pa.Overlaps(pb); got != want {
				t.Fatalf("%q.Overlaps(%q) = %v, brute force says %v", a, b, got, want)
			}
		}
	}
}
