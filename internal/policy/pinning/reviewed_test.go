package pinning

import (
	"errors"
	"strings"
	"testing"
)

// TestSetChanges (issue 23 item 4): a set approval goes ahead only when
// the approvable definitions are exactly those the review showed; each
// kind of difference is named, and a digest that is no digest is
// ErrDigestSyntax.
func TestSetChanges(t *testing.T) {
	a := pending(t, "up", Definition{Name: "a", Description: "A."})
	b := pending(t, "up", Definition{Name: "b", Description: "B."})
	b2, _, err := Observe("up", b, Definition{Name: "b", Description: "B, changed."})
	if err != nil {
		t.Fatal(err)
	}
	approvedB, err := Approve(b, b.SeenDigest, "op", now)
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := Vanish(approvedB)
	for _, tc := range []struct {
		name  string
		pins  map[string]*Pin
		shown map[string]string
		want  []string // substrings, one per change
		err   error
	}{
		{"as reviewed", map[string]*Pin{"a": a, "b": b}, map[string]string{"a": a.SeenDigest, "b": b.SeenDigest}, nil, nil},
		{"as reviewed, by prefix", map[string]*Pin{"a": a, "b": b}, map[string]string{"a": "sha256:" + a.SeenDigest[:16] + "…", "b": b.SeenDigest}, nil, nil},
		{"approved as shown since", map[string]*Pin{"a": a, "b": approvedB}, map[string]string{"a": a.SeenDigest, "b": b.SeenDigest}, nil, nil},
		{"changed since", map[string]*Pin{"a": a, "b": b2}, map[string]string{"a": a.SeenDigest, "b": b.SeenDigest}, []string{"b: the review showed sha256:" + b.SeenDigest + ", the upstream lists sha256:" + b2.SeenDigest}, nil},
		{"new since", map[string]*Pin{"a": a, "b": b}, map[string]string{"a": a.SeenDigest}, []string{"b: listed as sha256:" + b.SeenDigest + ", which the review did not show"}, nil},
		{"gone since", map[string]*Pin{"a": a, "b": gone}, map[string]string{"a": a.SeenDigest, "b": b.SeenDigest}, []string{"b: the review showed sha256:" + b.SeenDigest + ", the upstream no longer lists it"}, nil},
		{"never seen", map[string]*Pin{"a": a}, map[string]string{"a": a.SeenDigest, "c": b.SeenDigest}, []string{"c: the review showed"}, nil},
		{"approved otherwise since", map[string]*Pin{"a": a, "b": approvedB}, map[string]string{"a": a.SeenDigest, "b": b2.SeenDigest}, []string{"b: the review showed sha256:" + b2.SeenDigest + ", sha256:" + b.SeenDigest + " is approved since"}, nil},
		{"short prefix", map[string]*Pin{"a": a}, map[string]string{"a": a.SeenDigest[:8]}, nil, ErrDigestSyntax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetChanges(tc.pins, tc.shown)
			if !errors.Is(err, tc.err) || len(got) != len(tc.want) {
				t.Fatalf("SetChanges = %q, %v; want %d changes, %v", got, err, len(tc.want), tc.err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("change %d = %q, want %q", i, got[i], w)
				}
			}
		})
	}
}

// TestReviewedSet: the recorded review is each pin's marked digest; no
// mark at all is ErrNotReviewed; marking copies the pin.
func TestReviewedSet(t *testing.T) {
	a := pending(t, "up", Definition{Name: "a", Description: "A."})
	if _, err := ReviewedSet(map[string]*Pin{"a": a}); !errors.Is(err, ErrNotReviewed) {
		t.Fatalf("unreviewed: %v", err)
	}
	m := MarkReviewed(a, a.SeenDigest, "operator:x", now)
	if a.Reviewed != nil || m.Reviewed.Digest != a.SeenDigest || m.Reviewed.By != "operator:x" {
		t.Fatalf("MarkReviewed: %+v, original %+v", m.Reviewed, a.Reviewed)
	}
	got, err := ReviewedSet(map[string]*Pin{"a": m})
	if err != nil || got["a"] != a.SeenDigest {
		t.Fatalf("ReviewedSet = %v, %v", got, err)
	}
	// A reviewed pin stays reviewed with the digest shown when its
	// definition changes: the set approval then sees the change.
	changed, _, _ := Observe("up", m, Definition{Name: "a", Description: "A, changed."})
	if changed.Reviewed == nil || changed.Reviewed.Digest != a.SeenDigest {
		t.Fatalf("a new listing dropped the review mark: %+v", changed.Reviewed)
	}
}
