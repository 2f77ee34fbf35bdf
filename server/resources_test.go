package server

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/sources"
)

// TestPoolFilesAreResources: pool files are listed and read as MCP
// resources, every read going through the runner like read_pool_file
// (integrity, fence, audit), never further than the tools reach.
func TestPoolFilesAreResources(t *testing.T) {
	f := newFixture(t, "local")
	c := f.connect(t)
	ctx := context.Background()
	tmpl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	must(t, err)
	if len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate.Raw() != sources.FileURITemplate {
		t.Fatalf("templates: %+v", tmpl.ResourceTemplates)
	}
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	must(t, err)
	uris := map[string]bool{}
	for _, r := range list.Resources {
		uris[r.URI] = true
	}
	if !uris["airlock://pool/alpha/hello.txt"] || !uris["airlock://pool/beta/notes.md"] || uris["airlock://pool/gamma/g.txt"] {
		t.Fatalf("listed: %v", uris)
	}
	read := func(uri string) (*mcp.ReadResourceResult, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		return c.ReadResource(ctx, req)
	}
	res, err := read("airlock://pool/alpha/hello.txt")
	must(t, err)
	if tc, ok := res.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "hello, pool\n" {
		t.Fatalf("trusted read: %+v", res.Contents)
	}
	res, err = read("airlock://pool/beta/notes.md")
	must(t, err)
	if tc, ok := res.Contents[0].(mcp.TextResourceContents); !ok || !strings.Contains(tc.Text, "UNTRUSTED_EXTERNAL_CONTENT") {
		t.Fatalf("untrusted read not fenced: %+v", res.Contents)
	}
	res, err = read("airlock://pool/alpha/image.png")
	must(t, err)
	if _, ok := res.Contents[0].(mcp.BlobResourceContents); !ok {
		t.Fatalf("binary read: %+v", res.Contents)
	}
	for _, uri := range []string{
		"airlock://pool/alpha/../secret/passwd", // escape
		"airlock://pool/alpha/escape.txt",       // symlink out of the pool
		"airlock://pool/gamma/g.txt",            // configured, not bound
		"airlock://pool/alpha/unlisted.txt",     // not in the manifest
		"file:///etc/passwd",
	} {
		if _, err := read(uri); err == nil {
			t.Errorf("%s was served", uri)
		}
	}
	var reads, refused int
	for _, r := range f.auditRecords(t) {
		if r.Tool == "read_pool_file" {
			reads++
			if r.Outcome != "ok" {
				refused++
			}
		}
	}
	if reads != 7 || refused != 4 {
		t.Fatalf("audit: %d read_pool_file records, %d refused; want 7 and 4 (every resource read is a governed read)", reads, refused)
	}
}

// TestCapabilitiesAreServed: each capability the server advertises has
// something behind it.
func TestCapabilitiesAreServed(t *testing.T) {
	c := newFixture(t, "local").connect(t)
	ctx := context.Background()
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	must(t, err)
	if len(prompts.Prompts) != 2 || prompts.Prompts[0].Name != guidePrompt || prompts.Prompts[1].Name != pipelinePrompt {
		t.Fatalf("prompts: %+v", prompts.Prompts)
	}
	req := mcp.GetPromptRequest{}
	req.Params.Name = guidePrompt
	p, err := c.GetPrompt(ctx, req)
	must(t, err)
	if len(p.Messages) != 1 || !strings.Contains(p.Messages[0].Content.(mcp.TextContent).Text, "UNTRUSTED_EXTERNAL_CONTENT") {
		t.Fatalf("prompt: %+v", p)
	}
	res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	must(t, err)
	if len(res.Resources) == 0 {
		t.Fatal("resources advertised, none listed")
	}
}
