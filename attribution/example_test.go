package attribution_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/attribution"
)

func ExampleSigner() {
	key := make([]byte, attribution.MinKeyBytes) // in Airlock: random, persisted in the store
	s, err := attribution.NewSigner(key)
	if err != nil {
		panic(err)
	}
	content := []byte("fetched and fenced text")
	a := s.Sign(attribution.Attribution{
		ID:            "att-1",
		Source:        "https://example.com/page",
		RetrievedAt:   time.Date(2026, 1, 31, 10, 30, 0, 0, time.UTC),
		SessionID:     "sess-1",
		DeclarationID: "decl-1",
		ContentSHA256: attribution.ContentHash(content),
		TrustLevel:    "untrusted",
		Kind:          "comm.fetch",
	})
	fmt.Println(s.Verify(a, content, "sess-1"))

	a.Source = "https://trusted.example.org"
	fmt.Println(errors.Is(s.Verify(a, content, "sess-1"), attribution.ErrBadSignature))
	// Output:
	// <nil>
	// true
}

func ExampleSigner_VerifyEnvelope() {
	s, _ := attribution.NewSigner(make([]byte, attribution.MinKeyBytes))
	content := "fetched and fenced text"
	a := s.Sign(attribution.Attribution{ID: "att-1", SessionID: "sess-1", ContentSHA256: attribution.ContentHash(content)})
	env, _ := json.Marshal(attribution.Envelope{Attribution: a, Content: content})
	saved := `{"content":[{"type":"text","text":"…"}],"structuredContent":` + string(env) + `}`

	got, err := s.VerifyEnvelope([]byte(saved), "sess-1")
	fmt.Println(got.Attribution.ID, err)

	_, err = s.VerifyEnvelope([]byte(saved), "sess-2")
	fmt.Println(errors.Is(err, attribution.ErrWrongSession))
	// Output:
	// att-1 <nil>
	// true
}
