package redact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestJSON(t *testing.T) {
	r := New(key)
	tests := []struct {
		name, in  string
		secret    string // must not appear in the output
		keepPlain string // must still appear
	}{
		{"password key", `{"user":"ann","password":"hunter2"}`, "hunter2", "ann"},
		{"nested token", `{"headers":{"Authorization":"Bearer abc.def"}}`, "abc.def", "headers"},
		{"api key number", `{"api_key":12345678}`, "12345678", "api_key"},
		{"bearer value", `{"note":"Bearer s3cr3tvalue"}`, "s3cr3tvalue", "note"},
		{"aws key", `{"q":"AKIAABCDEFGHIJKLMNOP"}`, "AKIAABCDEFGHIJKLMNOP", "q"},
		{"private key", `{"x":"-----BEGIN RSA PRIVATE KEY-----\nMIIB"}`, "MIIB", "x"},
		{"url password", `{"url":"https://bob:pa55word@example.org/x"}`, "pa55word", "example.org/x"},
		{"array under secret", `{"tokens":["aaa","bbb"]}`, "bbb", "tokens"},
		{"plain kept", `{"pool":"sales","path":"regions.csv"}`, "", "regions.csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := string(r.JSON([]byte(tc.in)))
			if tc.secret != "" && strings.Contains(out, tc.secret) {
				t.Errorf("secret %q survived: %s", tc.secret, out)
			}
			if !strings.Contains(out, tc.keepPlain) {
				t.Errorf("plain %q lost: %s", tc.keepPlain, out)
			}
			if !json.Valid([]byte(out)) {
				t.Errorf("output not JSON: %s", out)
			}
		})
	}
}

func TestHashStableAndKeyed(t *testing.T) {
	a, b := New(key), New([]byte("another key another key another k"))
	if h1, h2 := a.Hash("x"), a.Hash("x"); h1 != h2 {
		t.Fatal("hash not stable")
	}
	if a.Hash("x") == b.Hash("x") {
		t.Fatal("hash not keyed")
	}
	if !strings.HasPrefix(a.Hash("x"), Prefix) {
		t.Fatal("missing prefix")
	}
}

func TestUnparseableIsHashedWhole(t *testing.T) {
	out := string(New(key).JSON([]byte(`{"password":"hunter2"`)))
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "unparseable") {
		t.Fatalf("got %s", out)
	}
}

func FuzzJSON(f *testing.F) {
	f.Add(`{"password":"hunter2","a":[1,{"token":"t"}]}`)
	f.Add(`"Bearer x"`)
	f.Add(`{`)
	r := New(key)
	f.Fuzz(func(t *testing.T, in string) {
		out := r.JSON([]byte(in))
		if len(out) > 0 && !json.Valid(out) {
			t.Fatalf("invalid JSON out for %q: %s", in, out)
		}
		var v map[string]any
		if json.Unmarshal([]byte(in), &v) == nil {
			if pw, ok := v["password"].(string); ok && len(pw) > 3 && strings.Contains(string(out), `"`+pw+`"`) {
				t.Fatalf("password %q survived: %s", pw, out)
			}
		}
	})
}

func ExampleRedactor_JSON() {
	r := New([]byte("example key, 32 bytes long......"))
	out := r.JSON([]byte(`{"pool":"sales","api_key":"k-123"}`))
	var v map[string]string
	_ = json.Unmarshal(out, &v)
	fmt.Println(v["pool"], strings.HasPrefix(v["api_key"], Prefix))
	// Output: sales true
}
