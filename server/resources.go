package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/sources"
)

// Pool files are MCP resources too, so a person in a desktop client can
// attach one: airlock://pool/{pool}/{path}. Nothing is served around the
// runner — a resources/read is a read_pool_file call (phase gate, policy,
// limits, integrity check, fence, audit record) and resources/list lists
// the context's bound pools through list_pools, so the resource view can
// never show or read more than the tools can.

// Bounds of resources/list: the first page of each of the first pools;
// the rest is reached with list_pools or the template.
const (
	maxListedPools        = 10
	maxListedFilesPerPool = 100
)

func (s *Server) registerResources(hooks *mcpserver.Hooks) {
	hooks.AddAfterListResources(s.listPoolFiles)
}

func (s *Server) addResourceTemplate() {
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(sources.FileURITemplate, "pool-file",
			mcp.WithTemplateDescription("A file of a source pool bound to this session, read through Airlock's governed read_pool_file: "+
				"integrity-checked, one page at a time, fenced when the pool is untrusted, audited.")),
		s.readPoolResource)
}

// readPoolResource is resources/read: read_pool_file through the runner.
func (s *Server) readPoolResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	pool, path, ok := sources.ParseFileURI(req.Params.URI)
	if !ok {
		return nil, fmt.Errorf("not a pool file URI (want %s): %w", sources.FileURITemplate, mcpserver.ErrResourceNotFound)
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, errors.New(s.refuseSession(ctx, err).Public())
	}
	args, _ := json.Marshal(map[string]any{"pool": pool, "path": path})
	resp := sess.Run(ctx, runner.Call{Tool: "read_pool_file", Args: args})
	if resp.IsError {
		switch resp.Code {
		case violation.UnknownPoolID, violation.PoolNotSelected, violation.IntegrityFailure, violation.PathOutsidePools:
			return nil, fmt.Errorf("%s: %w", resp.Text, mcpserver.ErrResourceNotFound)
		}
		return nil, errors.New(resp.Text)
	}
	if len(resp.Blobs) > 0 {
		out := make([]mcp.ResourceContents, 0, len(resp.Blobs))
		for _, b := range resp.Blobs {
			out = append(out, mcp.BlobResourceContents{URI: req.Params.URI, MIMEType: b.MIMEType,
				Blob: base64.StdEncoding.EncodeToString(b.Data), Meta: map[string]any{"airlock/trust": b.Trust}})
		}
		return out, nil
	}
	// The text as the tool gives it: trusted text as is, untrusted text
	// inside its fence with the notice (never bare).
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: resp.Text}}, nil
}

// listPoolFiles adds the context's pool files to resources/list, read
// through list_pools (so the listing is what the tools would show).
func (s *Server) listPoolFiles(ctx context.Context, _ any, req *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
	if req != nil && req.Params.Cursor != "" {
		return // mcp-go's own pages; ours is the first
	}
	sess, err := s.session(ctx)
	if err != nil {
		return
	}
	var pools struct {
		Pools []struct {
			ID    string `json:"id"`
			Trust string `json:"trust"`
		} `json:"pools"`
	}
	if !decodeStructured(sess.Run(ctx, runner.Call{Tool: "list_pools", Args: []byte(`{}`)}), &pools) {
		return
	}
	for i, p := range pools.Pools {
		if i == maxListedPools {
			break
		}
		args, _ := json.Marshal(map[string]any{"pool": p.ID, "limit": maxListedFilesPerPool})
		var page struct {
			Files []struct {
				Path string `json:"path"`
				Size int64  `json:"size"`
			} `json:"files"`
		}
		if !decodeStructured(sess.Run(ctx, runner.Call{Tool: "list_pools", Args: args}), &page) {
			continue
		}
		for _, f := range page.Files {
			r := mcp.NewResource(sources.FileURI(p.ID, f.Path), p.ID+"/"+f.Path,
				mcp.WithResourceDescription(fmt.Sprintf("%s pool %s (read through read_pool_file)", p.Trust, p.ID)))
			if f.Size >= 0 {
				size := f.Size
				r.Size = &size
			}
			result.Resources = append(result.Resources, r)
		}
	}
}

func decodeStructured(resp *runner.Response, v any) bool {
	if resp.IsError || resp.Structured == nil {
		return false
	}
	b, err := json.Marshal(resp.Structured)
	return err == nil && json.Unmarshal(b, v) == nil
}
