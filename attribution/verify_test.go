package attribution

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var testKey = bytes.Repeat([]byte{0x42}, MinKeyBytes)

func testSigner(t testing.TB) *Signer {
	t.Helper()
	s, err := NewSigner(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var testContent = []byte("the fenced page content")

func testAttribution() Attribution {
	return Attribution{
		ID:            "att-0001",
		Source:        "https://example.com/page",
		RetrievedAt:   time.Date(2026, 1, 31, 10, 30, 0, 123456789, time.UTC),
		SessionID:     "sess-1",
		DeclarationID: "decl-7",
		ContentSHA256: ContentHash(testContent),
		TrustLevel:    "untrusted",
		Kind:          "comm.fetch",
	}
}

func TestNewSigner(t *testing.T) {
	if _, err := NewSigner(make([]byte, MinKeyBytes-1)); !errors.Is(err, ErrShortKey) {
		t.Fatalf("short key: error = %v, want ErrShortKey", err)
	}
	key := bytes.Clone(testKey)
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Sign(testAttribution())
	key[0] ^= 1 // the signer must not alias the caller's key
	if err := s.Verify(a, testContent, "sess-1"); err != nil {
		t.Fatalf("signer changed with the caller's key slice: %v", err)
	}
}

// TestVerifyTampering: every way a record can be missing, altered, forged
// or replayed ends in its sentinel.
func TestVerifyTampering(t *testing.T) {
	s := testSigner(t)
	good := s.Sign(testAttribution())
	other, _ := NewSigner(bytes.Repeat([]byte{0x43}, MinKeyBytes))
	with := func(f func(*Attribution)) Attribution { a := good; f(&a); return a }
	sig := strings.TrimPrefix(good.Signature, SignaturePrefix)
	flip := map[byte]byte{'0': '1'}[sig[0]]
	if flip == 0 {
		flip = '0'
	}

	tests := []struct {
		name    string
		a       Attribution
		content []byte
		session string
		want    error
	}{
		{"genuine", good, testContent, "sess-1", nil},
		{"genuine, other time zone", with(func(a *Attribution) { a.RetrievedAt = a.RetrievedAt.In(time.FixedZone("X", 3600)) }), testContent, "sess-1", nil},
		{"zero value", Attribution{}, testContent, "sess-1", ErrMissing},
		{"unsigned", testAttribution(), testContent, "sess-1", ErrMissing},
		{"signature digit flipped", with(func(a *Attribution) { a.Signature = SignaturePrefix + string(flip) + sig[1:] }), testContent, "sess-1", ErrBadSignature},
		{"signature truncated", with(func(a *Attribution) { a.Signature = a.Signature[:len(a.Signature)-1] }), testContent, "sess-1", ErrBadSignature},
		{"signature extended", with(func(a *Attribution) { a.Signature += "0" }), testContent, "sess-1", ErrBadSignature},
		{"signature upper case", with(func(a *Attribution) { a.Signature = SignaturePrefix + strings.ToUpper(sig) }), testContent, "sess-1", ErrBadSignature},
		{"signature other algorithm", with(func(a *Attribution) { a.Signature = "hmac-sha512:" + sig }), testContent, "sess-1", ErrBadSignature},
		{"signature bare hex", with(func(a *Attribution) { a.Signature = sig }), testContent, "sess-1", ErrBadSignature},
		{"signature not hex", with(func(a *Attribution) { a.Signature = SignaturePrefix + strings.Repeat("zz", 32) }), testContent, "sess-1", ErrBadSignature},
		{"signed by another key", other.Sign(testAttribution()), testContent, "sess-1", ErrBadSignature},
		{"content changed", good, []byte("the fenced page content!"), "sess-1", ErrContentMismatch},
		{"content truncated", good, testContent[:5], "sess-1", ErrContentMismatch},
		{"content missing", good, nil, "sess-1", ErrContentMismatch},
		{"hash swapped for new content", with(func(a *Attribution) { a.ContentSHA256 = ContentHash([]byte("evil")) }), []byte("evil"), "sess-1", ErrBadSignature},
		{"session moved to the asker", with(func(a *Attribution) { a.SessionID = "sess-2" }), testContent, "sess-2", ErrBadSignature},
		{"other session", good, testContent, "sess-2", ErrWrongSession},
		{"empty session", good, testContent, "", ErrWrongSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Verify(tt.a, tt.content, tt.session)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestEveryFieldSigned alters each field but Signature in turn, found by
// reflection, so a field added to Attribution but left out of the signed
// encoding fails here.
func TestEveryFieldSigned(t *testing.T) {
	s := testSigner(t)
	good := s.Sign(testAttribution())
	typ := reflect.TypeOf(good)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Signature" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			a := good
			v := reflect.ValueOf(&a).Elem().Field(i)
			switch x := v.Interface().(type) {
			case string:
				v.SetString(x + "x")
			case time.Time:
				v.Set(reflect.ValueOf(x.Add(time.Nanosecond)))
			default:
				t.Fatalf("field %s of type %T: teach this test to alter it", f.Name, x)
			}
			if err := s.Verify(a, testContent, "sess-1"); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("altered %s: Verify = %v, want ErrBadSignature", f.Name, err)
			}
		})
	}
}

// TestCanonicalInjective: moving bytes between adjacent fields changes the
// encoding.
func TestCanonicalInjective(t *testing.T) {
	a, b := testAttribution(), testAttribution()
	a.ID, a.Source = "ab", "c"
	b.ID, b.Source = "a", "bc"
	if bytes.Equal(canonical(a), canonical(b)) {
		t.Fatal("canonical encoding is ambiguous")
	}
	c, d := testAttribution(), testAttribution()
	c.TrustLevel, c.Kind = "", "x"
	d.TrustLevel, d.Kind = "x", ""
	if bytes.Equal(canonical(c), canonical(d)) {
		t.Fatal("canonical encoding is ambiguous for empty fields")
	}
}

// TestKnownAnswer pins the signed encoding and the key derivation: if this
// changes, every stored attribution stops verifying.
func TestKnownAnswer(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Sign(Attribution{
		ID: "a1", Source: "https://example.com", RetrievedAt: time.Date(2026, 1, 31, 10, 30, 0, 500, time.UTC),
		SessionID: "s1", DeclarationID: "d1", ContentSHA256: ContentHash("hello"), TrustLevel: "untrusted", Kind: "comm.fetch",
	})
	// Computed independently (Python hmac + struct.pack(">Q", len)).
	const wantSig = "hmac-sha256:3adfdcd817ba94b634a3106df0423abe9b727eb61070dbe30950172e48f0dfd7"
	if a.Signature != wantSig {
		t.Errorf("signature = %s, want %s", a.Signature, wantSig)
	}
	if got, want := ContentHash("hello"), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; got != want {
		t.Errorf("ContentHash = %s, want %s", got, want)
	}
	if got, want := ContentHash([]byte("hello")), ContentHash("hello"); got != want {
		t.Errorf("ContentHash differs between string and []byte")
	}
	wantPrefix := "airlock.attribution.v1\x00\x00\x00\x00\x00\x00\x00\x02a1\x00\x00\x00\x00\x00\x00\x00\x13https://example.com" +
		"\x00\x00\x00\x00\x00\x00\x00\x1c2026-01-31T10:30:00.0000005Z"
	if got := string(canonical(a)); !strings.HasPrefix(got, wantPrefix) {
		t.Errorf("canonical = %q, want prefix %q", got, wantPrefix)
	}
}

// TestSignSurvivesJSON: a record signed with a monotonic, non-UTC time and
// invalid UTF-8 in a field still verifies after the JSON round trip every
// tool result takes.
func TestSignSurvivesJSON(t *testing.T) {
	s := testSigner(t)
	a := testAttribution()
	a.RetrievedAt = time.Now().In(time.FixedZone("Y", -5*3600))
	a.Source = "https://example.com/\xff\xfe/é\xc3"
	a = s.Sign(a)
	data, err := json.Marshal(Envelope{Attribution: a, Content: string(testContent)})
	if err != nil {
		t.Fatal(err)
	}
	env, err := s.VerifyEnvelope(data, "sess-1")
	if err != nil {
		t.Fatalf("VerifyEnvelope after JSON round trip: %v\n%s", err, data)
	}
	if env.Attribution.Source != a.Source || !env.Attribution.RetrievedAt.Equal(a.RetrievedAt) {
		t.Fatalf("round trip changed the record: %+v vs %+v", env.Attribution, a)
	}
}
