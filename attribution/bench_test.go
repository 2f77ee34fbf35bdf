package attribution_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/fence"
)

// benchSetup is a signer and 1 MiB of content, the benchmark's bytes per
// op set to it.
func benchSetup(b *testing.B) (*attribution.Signer, []byte) {
	s, err := attribution.NewSigner(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	content := benchContent()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	return s, content
}

func benchContent() []byte {
	unit := "The quick brown fox jumps over the lazy dog; users should run `go test ./...` before pushing.\n"
	return []byte(strings.Repeat(unit, 1<<20/len(unit)+1)[:1<<20])
}

func benchRecord(content []byte) attribution.Attribution {
	return attribution.Attribution{
		ID: "att-1", Source: "https://example.com/page", RetrievedAt: time.Now(), SessionID: "sess-1",
		DeclarationID: "decl-1", ContentSHA256: attribution.ContentHash(content), TrustLevel: "untrusted", Kind: "comm.fetch",
	}
}

// BenchmarkSignVerify: hash 1 MiB of content, sign, then verify (which
// hashes it again): the attribution cost per MiB.
func BenchmarkSignVerify(b *testing.B) {
	s, content := benchSetup(b)
	for b.Loop() {
		a := s.Sign(benchRecord(content))
		if err := s.Verify(a, content, "sess-1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFenceAndAttribute is the runner's whole step 12 for 1 MiB of
// fetched text: fence it, hash the fenced content and sign the record
// (make bench goal: at least 200 MiB/s).
func BenchmarkFenceAndAttribute(b *testing.B) {
	s, content := benchSetup(b)
	for b.Loop() {
		f, err := fence.Wrap(content, fence.Meta{Source: "https://example.com/page", Kind: "comm.fetch", AttributionID: "att-1"})
		if err != nil {
			b.Fatal(err)
		}
		a := benchRecord(nil)
		a.ContentSHA256 = attribution.ContentHash(f.Content)
		s.Sign(a)
	}
}
