package tools

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/schemas"
	"github.com/airlock-dev/airlock/sources"
)

func readPoolFile() toolkit.Tool {
	return toolkit.Tool{
		Name:  "read_pool_file",
		Title: "Read a pool file",
		Description: "Reads one file of a bound source pool by pool id and relative path. The bytes are checked against the pool's SHA-256 manifest; " +
			"large files are paged with offset/limit; binary files come back as an embedded resource; files of untrusted pools come back fenced.",
		Tier:         toolkit.TierRead,
		ReadOnly:     true,
		InputSchema:  schemas.MustReflect(&ReadPoolFileArgs{}),
		OutputSchema: outputSchema("read_pool_file"),
		NewArgs:      func() toolkit.Args { return &ReadPoolFileArgs{} },
		Capability:   func(toolkit.Args) string { return "pool.read" },
		Handle: func(_ context.Context, env *toolkit.Env, a toolkit.Args) (*toolkit.Result, error) {
			args := a.(*ReadPoolFileArgs)
			r, err := env.Sources.Read(args.Pool, args.Path, args.Offset, args.Limit)
			if err != nil {
				return nil, err
			}
			return renderRead(r, env.Config.Server.MaxOutputBytes)

		},
	}
}

// renderRead renders one page so that the runner never has to cut it: a
// text page is shortened (on a rune boundary) until it and its paging hint
// fit in budget, so next_offset always equals offset plus the bytes
// delivered (issue 10 item 11; server/content_test.go: TestPagingDeliversEveryByte).
func renderRead(r *sources.ReadResult, budget int) (*toolkit.Result, error) {
	untrusted := r.Trust != sources.Trusted
	asText := !r.Binary || (untrusted && fence.TextualMIME(r.MIMEType))
	hint := ""
	if asText {
		endOnRune(r)
		var err error
		if hint, err = fitPage(r, budget, untrusted); err != nil {
			return nil, err
		}
		// A page that is still not whole UTF-8 (the offset fell inside a
		// character, or the limit is smaller than one) would be altered by
		// JSON's U+FFFD on the way: trusted bytes go as a blob instead, so
		// what arrives is what the file holds.
		if !untrusted && !utf8.Valid(r.Data) {
			asText = false
		}
	}
	meta := map[string]any{
		"pool": r.PoolID, "path": r.Path, "trust": r.Trust, "offset": r.Offset, "next_offset": r.NextOffset,
		"size": r.Size, "eof": r.EOF, "sha256": r.SHA256, "mime_type": r.MIMEType, "binary": r.Binary,
	}
	res := &toolkit.Result{
		Structured: meta,
		Audit:      map[string]any{"pool": r.PoolID, "path": r.Path, "sha256": r.SHA256, "offset": r.Offset, "bytes": len(r.Data)},
	}
	// An untrusted file whose type reads as text (a .txt with one NUL byte
	// is "binary" to the sniffer) is fenced like any other text: a client
	// would show a text/plain resource to the model unfenced and unsanitized
	// (server/content_test.go: TestUntrustedBinaryTextIsFenced).
	if !asText {
		res.Text = fmt.Sprintf("Binary file %s in pool %s (%s, bytes %d-%d of %d), returned as an embedded resource.", fence.Quote(r.Path), r.PoolID, r.MIMEType, r.Offset, r.NextOffset, r.Size)
		res.Blobs = []toolkit.Blob{{URI: sources.FileURI(r.PoolID, r.Path), MIMEType: r.MIMEType, Data: r.Data, Trust: string(r.Trust)}}
		return res, nil
	}
	res.Exact = true
	if !untrusted {
		// The page and its hint are copied into one string once; the
		// trusted text is its prefix, not a second copy of the page
		// (issue 27; TestRenderReadBuildsThePageOnce).
		if hint == "" {
			res.Text = string(r.Data)
		} else {
			res.Text = string(r.Data) + "\n" + hint
		}
		res.TrustedText = res.Text[:len(r.Data)]
		res.Trusted = &toolkit.Provenance{Kind: "pool_file", Source: sources.FileURI(r.PoolID, r.Path), Trust: string(r.Trust), Readers: r.Readers}
		return res, nil
	}
	res.Text = hint
	res.UntrustedText = string(r.Data)
	res.Untrusted = &toolkit.Provenance{Kind: "pool_file", Source: sources.FileURI(r.PoolID, r.Path), Trust: string(r.Trust), Readers: r.Readers}
	return res, nil
}

// endOnRune drops a character cut by the page's end (the limit), so the
// next page starts on it; a page holding only part of one is left as is.
func endOnRune(r *sources.ReadResult) {
	if r.EOF || len(r.Data) == 0 {
		return
	}
	start := len(r.Data) - 1
	for start > 0 && len(r.Data)-start < utf8.UTFMax && !utf8.RuneStart(r.Data[start]) {
		start--
	}
	if utf8.RuneStart(r.Data[start]) && !utf8.FullRune(r.Data[start:]) && start > 0 {
		r.Data, r.NextOffset = r.Data[:start], r.Offset+int64(start)
	}
}

// pageHint tells the agent how to read on; "" on the last page.
func pageHint(r *sources.ReadResult) string {
	if r.EOF {
		return ""
	}
	// Appended on a stack buffer: one allocation, the string (Sprintf
	// boxed each of the four numbers as well).
	b := make([]byte, 0, 128)
	b = append(b, "[bytes "...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.NextOffset, 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, r.Size, 10)
	b = append(b, "; call read_pool_file with offset="...)
	b = strconv.AppendInt(b, r.NextOffset, 10)
	b = append(b, " for more]"...)
	return string(b)
}

// fitPage shortens r's data, on a rune boundary, until the runner can send
// it whole within budget: for a trusted page the data, a newline and the
// hint; for an untrusted page the hint, and the data (fenced after it). It
// keeps NextOffset = Offset + len(Data). A budget too small for one rune
// is LIMIT_EXCEEDED rather than an empty page the client would loop on.
func fitPage(r *sources.ReadResult, budget int, untrusted bool) (hint string, err error) {
	for {
		hint = pageHint(r)
		over := len(hint) + len(r.Data) - budget
		if !untrusted && hint != "" {
			over++
		}
		if over <= 0 {
			return hint, nil
		}
		n := len(r.Data) - over
		for n > 0 && !utf8.RuneStart(r.Data[n]) {
			n--
		}
		if n <= 0 {
			return "", violation.New(violation.LimitExceeded, "max_output_bytes (%d) leaves no room for a page of this file", budget)
		}
		r.Data, r.NextOffset, r.EOF = r.Data[:n], r.Offset+int64(n), false
	}
}
