package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/schemas"
	"github.com/airlock-dev/airlock/sources"
)

// ListPoolsArgs are list_pools' arguments.
type ListPoolsArgs struct {
	Pool   string `json:"pool,omitempty" jsonschema:"maxLength=64,description=A bound pool's id: list its files (paged) instead of the pools."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0,description=Index of the first file (with pool) or pool (without) to list."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=0,maximum=1000,description=Most files (with pool) or pools (without) to list (default 100)."`
}

// Validate implements toolkit.Args.
func (a *ListPoolsArgs) Validate() error {
	switch {
	case len(a.Pool) > 64:
		return invalid("pool", "at most 64 characters")
	case a.Offset < 0:
		return invalid("offset", "must be >= 0")
	case a.Limit < 0 || a.Limit > 1000:
		return invalid("limit", "must be between 0 and 1000")
	}
	return nil
}

// ReadPoolFileArgs are read_pool_file's arguments.
type ReadPoolFileArgs struct {
	Pool   string `json:"pool" jsonschema:"minLength=1,maxLength=64,description=Id of a pool bound to this session (see list_pools)." jsonschema_extras:"x-mcp-header=Pool"`
	Path   string `json:"path" jsonschema:"minLength=1,maxLength=4096,description=File path relative to the pool root\\, as list_pools shows it."`
	Offset int64  `json:"offset,omitempty" jsonschema:"minimum=0,description=Byte offset to start reading at (for paging)."`
	Limit  int64  `json:"limit,omitempty" jsonschema:"minimum=0,description=Most bytes to return (default and maximum: the server's max_read_bytes)."`
}

// Validate implements toolkit.Args.
func (a *ReadPoolFileArgs) Validate() error {
	switch {
	case a.Pool == "" || len(a.Pool) > 64:
		return invalid("pool", "required, at most 64 characters")
	case a.Path == "" || len(a.Path) > 4096:
		return invalid("path", "required, at most 4096 bytes")
	case a.Offset < 0:
		return invalid("offset", "must be >= 0")
	case a.Limit < 0:
		return invalid("limit", "must be >= 0")
	}
	return nil
}

func invalid(field, why string) error {
	return violation.New(violation.InvalidArguments, "argument %q: %s", field, why)
}

func listPools() toolkit.Tool {
	return toolkit.Tool{
		Name:  "list_pools",
		Title: "List source pools",
		Description: "Lists the read-only source pools bound to this session (id, description, trust, file count, integrity state): " +
			"the configured pools first, then pipeline outputs newest first, paged by offset/limit. " +
			"With `pool`, lists that pool's files with sizes and SHA-256 hashes, paged by offset/limit.",
		Tier:         toolkit.TierRead,
		ReadOnly:     true,
		InputSchema:  schemas.MustReflect(&ListPoolsArgs{}),
		OutputSchema: outputSchema("list_pools"),
		NewArgs:      func() toolkit.Args { return &ListPoolsArgs{} },
		Capability:   func(toolkit.Args) string { return "pool.list" },
		Handle: func(_ context.Context, env *toolkit.Env, a toolkit.Args) (*toolkit.Result, error) {
			args := a.(*ListPoolsArgs)
			limit := args.Limit
			if limit == 0 {
				limit = 100
			}
			if args.Pool == "" {
				return renderPools(env.Sources.Pools(), args.Offset, limit), nil
			}
			page, err := env.Sources.List(args.Pool, args.Offset, limit)
			if err != nil {
				return nil, err
			}
			return renderFiles(page, args.Offset), nil
		},
	}
}

func renderPools(all []sources.PoolInfo, offset, limit int) *toolkit.Result {
	page := all[min(offset, len(all)):min(offset+limit, len(all))]
	next := -1
	if offset+len(page) < len(all) {
		next = offset + len(page)
	}
	var b strings.Builder
	if len(all) == 0 {
		b.WriteString("No source pools are bound to this session.\n")
	}
	for _, p := range page {
		kind := ""
		if p.Output {
			kind = ", pipeline output"
		}
		fmt.Fprintf(&b, "- %s (%s%s, %d files, %d bytes, integrity %s): %s\n", p.ID, p.Trust, kind, p.Files, p.Bytes, p.Integrity, p.Description)
	}
	if next > 0 {
		fmt.Fprintf(&b, "[pools %d-%d of %d; more: call list_pools with offset=%d]\n", offset, offset+len(page), len(all), next)
	}
	return &toolkit.Result{
		Text:       b.String(),
		Structured: map[string]any{"pools": page, "total": len(all), "next_offset": next},
		Audit:      map[string]any{"pools": len(page)},
	}
}

func renderFiles(page *sources.ListPage, offset int) *toolkit.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Pool %s: files %d-%d of %d\n", page.PoolID, offset, offset+len(page.Files), page.Total)
	// File names come from the pool's manifest, written by whoever filled
	// the pool: quoted, so a name cannot add a line (issue 10 item 5).
	for _, f := range page.Files {
		fmt.Fprintf(&b, "- %s (%d bytes, sha256 %s)\n", fence.Quote(f.Path), f.Size, f.SHA256)
	}
	if page.NextOffset > 0 {
		fmt.Fprintf(&b, "[more files: call list_pools with pool=%q offset=%d]\n", page.PoolID, page.NextOffset)
	}
	return &toolkit.Result{
		Text:       b.String(),
		Structured: page,
		Audit:      map[string]any{"pool": page.PoolID, "files": len(page.Files)},
	}
}
