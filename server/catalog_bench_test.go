package server

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkToolsList: one tools/list through an in-process mcp-go client.
// "no-upstreams" is the baseline measured in the same run (nothing to
// specialise); "upstreams" lists declare_need's per-caller catalog of three
// approved upstream tools (a context read, a pins read and a cache hit per
// listing; runner.Session.Tools).
func BenchmarkToolsList(b *testing.B) {
	b.Run("no-upstreams", func(b *testing.B) {
		benchToolsList(b, newFixture(b, "local"))
	})
	b.Run("upstreams", func(b *testing.B) {
		cfg, _ := upstreamConfig(b, "mcper", "")
		f := newFixtureConfig(b, cfg)
		f.approveAll(b, "echo", "add", "big")
		benchToolsList(b, f)
	})
}

func benchToolsList(b *testing.B, f *fixture) {
	c := f.connect(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
