package challenge

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	testKey  = bytes.Repeat([]byte{0x42}, 32)
	otherKey = bytes.Repeat([]byte{0x17}, 32)
	t0       = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func testClaims() Claims {
	return Claims{
		DeclarationID: "decl_1",
		ContextID:     "ctx_1",
		Principal:     "alice",
		NeedDigest:    "sha256:abcd",
		PolicyVersion: "v1",
		Expires:       t0.Add(5 * time.Minute),
	}
}

func mustNew(t testing.TB, key []byte) *Keyed {
	t.Helper()
	k, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustMint(t testing.TB, k *Keyed, c Claims) string {
	t.Helper()
	tok, err := k.Mint(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestNewKeyLength(t *testing.T) {
	for _, n := range []int{0, 1, 16, 31} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New with a %d-byte key succeeded", n)
		}
	}
	for _, n := range []int{32, 64} {
		if _, err := New(make([]byte, n)); err != nil {
			t.Errorf("New with a %d-byte key: %v", n, err)
		}
	}
}

func TestNewCopiesKey(t *testing.T) {
	key := bytes.Clone(testKey)
	k := mustNew(t, key)
	tok := mustMint(t, k, testClaims())
	key[0] ^= 0xff // the caller reuses its buffer
	if _, err := k.Verify(tok, testClaims(), t0); err != nil {
		t.Fatalf("Keyed depends on the caller's key buffer: %v", err)
	}
}

func TestVerify(t *testing.T) {
	k := mustNew(t, testKey)
	tok := mustMint(t, k, testClaims())
	with := func(f func(*Claims)) Claims {
		c := testClaims()
		f(&c)
		return c
	}
	tests := []struct {
		name string
		want Claims
		now  time.Time
		err  error // nil = verifies
	}{
		{"matching claims", testClaims(), t0, nil},
		{"empty want compares nothing", Claims{}, t0, nil},
		{"just before expiry", testClaims(), t0.Add(5*time.Minute - time.Nanosecond), nil},
		{"want's expiry and nonce are not compared", with(func(c *Claims) { c.Expires = t0; c.Nonce = "x" }), t0, nil},
		{"other declaration", with(func(c *Claims) { c.DeclarationID = "decl_2" }), t0, ErrMismatch},
		{"other context", with(func(c *Claims) { c.ContextID = "ctx_2" }), t0, ErrMismatch},
		{"other principal", with(func(c *Claims) { c.Principal = "mallory" }), t0, ErrMismatch},
		{"other need digest", with(func(c *Claims) { c.NeedDigest = "sha256:abce" }), t0, ErrMismatch},
		{"other policy version", with(func(c *Claims) { c.PolicyVersion = "v2" }), t0, ErrMismatch},
		{"prefix of a field", with(func(c *Claims) { c.DeclarationID = "decl_" }), t0, ErrMismatch},
		{"extension of a field", with(func(c *Claims) { c.ContextID = "ctx_10" }), t0, ErrMismatch},
		{"expired at Expires", testClaims(), t0.Add(5 * time.Minute), ErrExpired},
		{"expired after Expires", testClaims(), t0.Add(time.Hour), ErrExpired},
		{"expiry checked before binding", with(func(c *Claims) { c.Principal = "mallory" }), t0.Add(time.Hour), ErrExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.Verify(tok, tc.want, tc.now)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := testClaims()
			want.Nonce = got.Nonce
			if got != want {
				t.Fatalf("claims = %+v, want %+v", got, want)
			}
			if len(got.Nonce) != 32 {
				t.Fatalf("nonce %q, want 32 hex digits", got.Nonce)
			}
		})
	}
}

func TestMintNormalisesExpiryAndIgnoresNonce(t *testing.T) {
	k := mustNew(t, testKey)
	c := testClaims()
	c.Nonce = "chosen-by-caller"
	loc := time.FixedZone("X", 3600)
	c.Expires = t0.Add(5*time.Minute + 700*time.Millisecond).In(loc)
	got, err := k.Verify(mustMint(t, k, c), Claims{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Nonce == "chosen-by-caller" {
		t.Fatal("Mint kept the caller's nonce")
	}
	if !got.Expires.Equal(t0.Add(5*time.Minute)) || got.Expires.Location() != time.UTC {
		t.Fatalf("expires = %v, want %v in UTC", got.Expires, t0.Add(5*time.Minute))
	}
}

func TestMintFreshNonces(t *testing.T) {
	k := mustNew(t, testKey)
	seen := map[string]bool{}
	tokens := map[string]bool{}
	for range 50 {
		tok := mustMint(t, k, testClaims())
		c, err := k.Verify(tok, testClaims(), t0)
		if err != nil {
			t.Fatal(err)
		}
		if seen[c.Nonce] || tokens[tok] {
			t.Fatalf("nonce %s minted twice", c.Nonce)
		}
		seen[c.Nonce], tokens[tok] = true, true
	}
}

// alphabet is every character a token may hold, plus a few it may not.
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \n\r\x00\xff"

func TestEveryAlterationFails(t *testing.T) {
	k := mustNew(t, testKey)
	tok := mustMint(t, k, testClaims())
	check := func(t *testing.T, what string, bad string) {
		t.Helper()
		_, err := k.Verify(bad, Claims{}, t0)
		if err == nil {
			t.Fatalf("%s verifies: %q", what, bad)
		}
		if !errors.Is(err, ErrSignature) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: err = %v, want ErrSignature or ErrMalformed", what, err)
		}
	}
	// Replace each byte after the prefix (payload, separator and MAC) by
	// every other character.
	for i := len(Prefix); i < len(tok); i++ {
		for j := 0; j < len(alphabet); j++ {
			if alphabet[j] == tok[i] {
				continue
			}
			b := []byte(tok)
			b[i] = alphabet[j]
			check(t, "replacing byte "+strconv.Itoa(i), string(b))
		}
	}
	// Insert a character at each position, and delete each byte.
	for i := len(Prefix); i <= len(tok); i++ {
		for j := 0; j < len(alphabet); j++ {
			check(t, "inserting at "+strconv.Itoa(i), tok[:i]+alphabet[j:j+1]+tok[i:])
		}
		if i < len(tok) {
			check(t, "deleting byte "+strconv.Itoa(i), tok[:i]+tok[i+1:])
		}
	}
	// The prefix itself.
	for i := range len(Prefix) {
		b := []byte(tok)
		b[i] ^= 0x20
		if _, err := k.Verify(string(b), Claims{}, t0); !errors.Is(err, ErrMalformed) {
			t.Fatalf("altered prefix byte %d: err = %v, want ErrMalformed", i, err)
		}
	}
}

func TestOtherKey(t *testing.T) {
	k := mustNew(t, testKey)
	other := mustNew(t, otherKey)
	tok := mustMint(t, other, testClaims())
	if _, err := k.Verify(tok, testClaims(), t0); !errors.Is(err, ErrSignature) {
		t.Fatalf("token of another key: err = %v, want ErrSignature", err)
	}
	if _, err := k.Peek(tok); !errors.Is(err, ErrSignature) {
		t.Fatalf("Peek of another key's token: err = %v, want ErrSignature", err)
	}
}

func TestMalformed(t *testing.T) {
	k := mustNew(t, testKey)
	tok := mustMint(t, k, testClaims())
	p, sig, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
	tests := []struct {
		name, token string
	}{
		{"empty", ""},
		{"prefix only", Prefix},
		{"no prefix", strings.TrimPrefix(tok, Prefix)},
		{"other prefix", "alc2." + strings.TrimPrefix(tok, Prefix)},
		{"no separator", Prefix + p + sig},
		{"truncated to the payload", Prefix + p},
		{"truncated mid-payload", tok[:len(Prefix)+len(p)/2]},
		{"empty MAC", Prefix + p + "."},
		{"MAC not base64", Prefix + p + ".!!!!"},
		{"oversized", tok + "." + strings.Repeat("A", maxTokenBytes)},
		{"oversized by one", Prefix + strings.Repeat("A", maxTokenBytes-len(Prefix)+1)},
		{"whitespace around", " " + tok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Verify(tc.token, testClaims(), t0)
			if tc.name == "truncated mid-payload" || tc.name == "empty MAC" || tc.name == "MAC not base64" || tc.name == "truncated to the payload" {
				// These fail on the MAC or its encoding; either is fine.
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) {
					t.Fatalf("err = %v, want ErrMalformed or ErrSignature", err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

// A correctly MACed payload that is not a challenge is still malformed.
func TestSignedGarbageIsMalformed(t *testing.T) {
	k := mustNew(t, testKey)
	sign := func(payload []byte) string {
		p := base64.RawURLEncoding.EncodeToString(payload)
		return Prefix + p + "." + base64.RawURLEncoding.EncodeToString(k.mac(p))
	}
	for _, payload := range []string{"", "null", "[]", "{", `{"d":"decl_1"}`, `{"r":1}`} {
		if _, err := k.Verify(sign([]byte(payload)), Claims{}, t0); !errors.Is(err, ErrMalformed) {
			t.Errorf("signed payload %q: err = %v, want ErrMalformed", payload, err)
		}
	}
	// A payload that is not base64 but carries a valid MAC of its text.
	p := "not*base64"
	bad := Prefix + p + "." + base64.RawURLEncoding.EncodeToString(k.mac(p))
	if _, err := k.Verify(bad, Claims{}, t0); !errors.Is(err, ErrMalformed) {
		t.Errorf("signed non-base64 payload: err = %v, want ErrMalformed", err)
	}
}

func TestForgedClaimKeepsOldMAC(t *testing.T) {
	k := mustNew(t, testKey)
	tok := mustMint(t, k, testClaims())
	p, sig, _ := strings.Cut(strings.TrimPrefix(tok, Prefix), ".")
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		t.Fatal(err)
	}
	forgeries := map[string]func(*Claims){
		"later expiry":    func(c *Claims) { c.Expires = c.Expires.Add(24 * time.Hour) },
		"other principal": func(c *Claims) { c.Principal = "mallory" },
		"other decl":      func(c *Claims) { c.DeclarationID = "decl_2" },
		"other nonce":     func(c *Claims) { c.Nonce = strings.Repeat("0", 32) },
		"same claims":     func(c *Claims) {}, // re-encoded only
	}
	for name, f := range forgeries {
		t.Run(name, func(t *testing.T) {
			var c Claims
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			f(&c)
			// Re-encode with reordered/indented JSON so the bytes differ
			// even when the claims do not.
			b, err := json.MarshalIndent(c, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			forged := Prefix + base64.RawURLEncoding.EncodeToString(b) + "." + sig
			want := testClaims()
			f(&want)
			if _, err := k.Verify(forged, want, t0.Add(time.Hour)); !errors.Is(err, ErrSignature) {
				t.Fatalf("forged token: err = %v, want ErrSignature", err)
			}
		})
	}
	// Padding the payload's base64 (another encoding of the same bytes) is
	// not accepted either: the MAC covers the text.
	padded := Prefix + base64.URLEncoding.EncodeToString(raw) + "." + sig
	if padded != tok {
		if _, err := k.Verify(padded, testClaims(), t0); err == nil {
			t.Fatal("re-encoded payload verifies")
		}
	}
}

func TestPeek(t *testing.T) {
	k := mustNew(t, testKey)
	c := testClaims()
	c.Expires = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) // long expired
	tok := mustMint(t, k, c)
	got, err := k.Peek(tok)
	if err != nil {
		t.Fatalf("Peek of an expired token: %v", err)
	}
	if got.DeclarationID != "decl_1" || got.Nonce == "" {
		t.Fatalf("Peek = %+v", got)
	}
	if _, err := k.Peek(tok[:len(tok)-2] + "AA"); err == nil {
		t.Fatal("Peek of an altered token succeeded")
	}
	if _, err := k.Peek("alc1.garbage"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Peek of garbage: err = %v", err)
	}
}

func TestIs(t *testing.T) {
	k := mustNew(t, testKey)
	if !Is(mustMint(t, k, testClaims())) {
		t.Fatal("Is(minted token) = false")
	}
	for _, s := range []string{"", "alc1", "ALC1.x", "state-123", " alc1.x"} {
		if Is(s) {
			t.Errorf("Is(%q) = true", s)
		}
	}
}

func TestTokenSize(t *testing.T) {
	k := mustNew(t, testKey)
	c := testClaims()
	c.DeclarationID = strings.Repeat("d", 100)
	c.ContextID = "ctx_" + strings.Repeat("0", 24)
	c.NeedDigest = "sha256:" + strings.Repeat("f", 64)
	tok := mustMint(t, k, c)
	if len(tok) > 1024 {
		t.Fatalf("a realistic token is %d bytes, want under 1 KiB", len(tok))
	}
	if _, err := k.Verify(tok, c, t0); err != nil {
		t.Fatal(err)
	}
}

// deterministicToken is what Mint returns for c with the given nonce: the
// fuzz workers must agree on the seed token, so it cannot be random.
func deterministicToken(t testing.TB, k *Keyed, c Claims, nonce string) string {
	t.Helper()
	c.Nonce = nonce
	c.Expires = c.Expires.UTC().Truncate(time.Second)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	p := base64.RawURLEncoding.EncodeToString(b)
	return Prefix + p + "." + base64.RawURLEncoding.EncodeToString(k.mac(p))
}

func TestDeterministicTokenMatchesMint(t *testing.T) {
	k := mustNew(t, testKey)
	tok := mustMint(t, k, testClaims())
	c, err := k.Verify(tok, testClaims(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := deterministicToken(t, k, testClaims(), c.Nonce); got != tok {
		t.Fatalf("deterministicToken = %q, Mint = %q", got, tok)
	}
}

func FuzzVerify(f *testing.F) {
	k := mustNew(f, testKey)
	other := mustNew(f, otherKey)
	nonce := strings.Repeat("5a", 16)
	tok := deterministicToken(f, k, testClaims(), nonce)
	f.Add(tok)
	f.Add(deterministicToken(f, other, testClaims(), nonce))
	f.Add(tok[:len(tok)-1])
	f.Add(tok + "A")
	f.Add(tok[:len(tok)-1] + "B")
	f.Add(tok[:len(tok)/2] + "\n" + tok[len(tok)/2:])
	f.Add(tok[:len(tok)-5] + "\n" + tok[len(tok)-5:])
	f.Add(tok[:len(tok)-5] + "\r" + tok[len(tok)-5:])
	f.Add(strings.Replace(tok, ".", "..", 1))
	f.Add(strings.Replace(tok, "eyJ", "eyK", 1))
	f.Add(Prefix)
	f.Add(Prefix + ".")
	f.Add("")
	f.Add("alc1.e30.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := k.Verify(s, Claims{}, t0)
		if err == nil && s != tok {
			t.Fatalf("unminted token verifies: %q → %+v", s, c)
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSignature) &&
			!errors.Is(err, ErrExpired) && !errors.Is(err, ErrMismatch) {
			t.Fatalf("unexpected error %v", err)
		}
		if _, err := k.Peek(s); err == nil && s != tok {
			t.Fatalf("Peek accepts an unminted token: %q", s)
		}
	})
}
