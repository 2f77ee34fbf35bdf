package server

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestCredentialsSplitSecretNeverReformed (issue 26, item 5): a named host
// echoes the Authorization header it was sent with characters the fence's
// sanitizer removes between its letters (U+200B, U+00AD, a word joiner, a
// BOM, a tag character, an escape sequence), in the page and in a
// redirect's Location; a pipeline prints its variable split by U+200B on
// stdout and by U+00AD on stderr, and another writes it split into an
// output file (withheld, CREDENTIAL_EXPOSED). Scrubbing the raw text misses them and
// sanitizing re-forms them: what the agent reads holds the credential's
// marker, never the secret.
func TestCredentialsSplitSecretNeverReformed(t *testing.T) {
	seps := []string{"\u200b", "\u00ad", "\u2060", "\ufeff", "\U000e0041", "\x1b[31m"}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "landed")
	}))
	defer other.Close()
	named := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		sep, _ := hex.DecodeString(r.URL.Query().Get("sep"))
		split := strings.Join(strings.Split(r.Header.Get("Authorization"), ""), string(sep))
		if r.URL.Path == "/leaky" {
			// Raw bytes in the Location, as http.Redirect would not write them.
			w.Header().Set("Location", other.URL+"/landed?got="+split)
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "you sent %s\n", split)
	}))
	defer named.Close()
	cf := newCredFixture(t, strings.TrimPrefix(named.URL, "http://"))
	const marker = "[REDACTED:credential:api-header]"
	for _, sep := range seps {
		q := "?sep=" + hex.EncodeToString([]byte(sep))
		res := cf.call(t, "declare_need", need(named.URL+"/page"+q))
		if res.IsError || !strings.Contains(text(res), "you sent "+marker) {
			t.Errorf("%q: page not scrubbed: %s", sep, text(res))
		}
		if sep[0] < ' ' {
			continue // a URL with a control character is refused by the client
		}
		// The final URL and the redirects reach the agent in their
		// normal form, percent-encoded: nothing re-forms there, and the
		// grep below checks it.
		if res := cf.call(t, "declare_need", need(named.URL+"/leaky"+q)); res.IsError {
			t.Errorf("%q: leaky redirect: %s", sep, text(res))
		}
	}
	res := cf.call(t, "run_pipeline", map[string]any{"pipeline": "print_split_secret"})
	if res.IsError || strings.Count(text(res), "[REDACTED:credential:pipe-token]") != 2 {
		t.Errorf("print_split_secret: %s", text(res))
	}
	// Written into an output file so split, it would be re-formed by the
	// fence of read_pool_file: the outputs are withheld.
	if res := cf.call(t, "run_pipeline", map[string]any{"pipeline": "leak_split_secret"}); code(res) != string(violation.CredentialExposed) {
		t.Errorf("leak_split_secret: %s", text(res))
	}
	for i, r := range cf.responses {
		for _, s := range []string{cf.envSecret, cf.fileSecret} {
			if strings.Contains(r, s) {
				t.Errorf("response %d holds a secret (%s…): %s", i, s[:10], r)
			}
		}
	}
}
