package declarations_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/declarations"
)

// FuzzNeedJSON feeds hostile JSON to the two ways a need is decoded: the
// runner's (encoding/json with DisallowUnknownFields, then Validate) and
// ParseNeed. Neither may panic; every error is a FieldError wrapping
// ErrInvalid that does not repeat the input; a valid need's canonical form
// decodes to the same need and the same fingerprint; and ParseNeed accepts
// nothing encoding/json would read differently.
func FuzzNeedJSON(f *testing.F) {
	for _, n := range []declarations.Need{validFetch(), validSearch(), validQuery()} {
		f.Add(n.Canonical())
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"operation":"comm.fetch"}`,
		`{"operation":"comm.fetch","operation":"comm.query"}`,
		`{"Operation":"comm.fetch","parameters":{"URL":"https://example.com/"}}`,
		`{"operation":"comm.fetch","parameters":{"url":"https://u:p@example.com/"},"justification":{"user_request":"a","missing_knowledge":"b","expected_use":"c"}}`,
		`{"operation":"comm.search","parameters":{"query":"a\u202eb"},"justification":{"user_request":"\u0000","missing_knowledge":"b","expected_use":"c"}}`,
		`{"operation":"comm.query","parameters":{"query":"SELECT 1","source":"../x"},"justification":{"user_request":"a","missing_knowledge":"b","expected_use":"c"}}`,
		`{"parameters":{"url":{"a":[1,2,{"b":null}]}}}`,
		"{\"operation\":\"comm.fetch\xff\"}",
		`{"operation":"comm.fetch","parameters":{"url":"https://example.com/"},"justification":{"user_request":"\ud800","missing_knowledge":"b","expected_use":"c"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var n declarations.Need
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		decErr := dec.Decode(&n)
		var validErr error = errNotDecoded
		if decErr == nil {
			validErr = n.Validate()
			checkFieldError(t, validErr, data)
		}
		if validErr == nil {
			c := n.Canonical()
			var back declarations.Need
			strict := json.NewDecoder(bytes.NewReader(c))
			strict.DisallowUnknownFields()
			if err := strict.Decode(&back); err != nil || !reflect.DeepEqual(back, n) {
				t.Fatalf("canonical %s does not round-trip: %v", c, err)
			}
			if !bytes.Equal(back.Canonical(), c) || back.Fingerprint() != n.Fingerprint() {
				t.Fatalf("canonical form not stable: %s", c)
			}
			if p, err := declarations.ParseNeed(c); err != nil || !reflect.DeepEqual(*p, n) {
				t.Fatalf("ParseNeed refuses the canonical form %s: %v", c, err)
			}
		}

		p, err := declarations.ParseNeed(data)
		if err != nil {
			checkFieldError(t, err, data)
			return
		}
		// ParseNeed accepted: encoding/json must read the same valid need.
		if decErr != nil || validErr != nil || !reflect.DeepEqual(*p, n) {
			t.Fatalf("ParseNeed accepted %q as %+v; encoding/json: %+v, %v, %v", data, *p, n, decErr, validErr)
		}
	})
}

var errNotDecoded = errors.New("not decoded")

func checkFieldError(t *testing.T, err error, data []byte) {
	t.Helper()
	if err == nil {
		return
	}
	var fe *declarations.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, declarations.ErrInvalid) {
		t.Fatalf("error %v (%T) is not a FieldError", err, err)
	}
	// The reason is one of ours, never the input: no reason has a quote.
	if strings.ContainsAny(fe.Reason, "\"\x00") || len(fe.Reason) > 200 {
		t.Fatalf("reason %q may repeat the input %q", fe.Reason, data)
	}
}

// FuzzValidateFields checks Validate against independent oracles: a URL
// it accepts is absolute http(s) ASCII without user information that
// net/url parses, and text it accepts has no control character but \n
// and \t, no bidi or invisible formatting character and valid UTF-8.
func FuzzValidateFields(f *testing.F) {
	f.Add("https://example.com/a?b#c", "SELECT 1", "db", "why\n\twhy")
	f.Add("https://u@h/", "a\u202eb", "Bad", "\x00")
	f.Add("HTTP://[::1]:80/", "\uFE0F", "a.b-c_d", "ok \u2764\uFE0F")
	f.Fuzz(func(t *testing.T, rawURL, query, source, text string) {
		n := validFetch()
		n.Parameters.URL = rawURL
		n.Justification.UserRequest = text
		if n.Validate() == nil {
			u, err := url.Parse(rawURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Hostname() == "" ||
				strings.ContainsFunc(rawURL, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }) {
				t.Fatalf("accepted URL %q", rawURL)
			}
			checkAcceptedText(t, text)
		}
		q := validQuery()
		q.Parameters.Query, q.Parameters.Source = query, source
		if q.Validate() == nil {
			checkAcceptedText(t, query)
			if !sourceRE.MatchString(source) {
				t.Fatalf("accepted source %q", source)
			}
		}
	})
}

var sourceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

func checkAcceptedText(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.TrimSpace(s) == "" {
		t.Fatalf("accepted text %q", s)
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) ||
			unicode.Is(unicode.Bidi_Control, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)) {
			t.Fatalf("accepted text %q with %U", s, r)
		}
	}
}
