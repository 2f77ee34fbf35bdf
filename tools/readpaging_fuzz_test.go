package tools

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/sources"
)

// rawPage is what sources.Read hands the tool for [offset, offset+limit):
// the file's bytes, copied, with its paging fields.
func rawPage(file []byte, offset, limit int, trust sources.Trust) *sources.ReadResult {
	end := min(offset+limit, len(file))
	head := file[:min(len(file), 8192)]
	return &sources.ReadResult{PoolID: "p", Path: "f.txt", Trust: trust, Offset: int64(offset),
		NextOffset: int64(end), EOF: end == len(file), Size: int64(len(file)), Data: bytes.Clone(file[offset:end]),
		MIMEType: "text/plain; charset=utf-8", Binary: !utf8.Valid(head) || bytes.IndexByte(head, 0) >= 0}
}

// delivered is the file bytes a rendered page carries to the agent.
func delivered(t *testing.T, res *toolkit.Result, trust sources.Trust) []byte {
	t.Helper()
	switch {
	case len(res.Blobs) == 1:
		return res.Blobs[0].Data
	case len(res.Blobs) > 1:
		t.Fatalf("%d blobs for one page", len(res.Blobs))
	case trust == sources.Trusted:
		return []byte(res.TrustedText)
	}
	return []byte(res.UntrustedText)
}

// FuzzReadPagesDeliverTheFile: for any file content, agent offset and limit
// and server output budget, a rendered read_pool_file page carries exactly
// the file's bytes [offset, next_offset) (never past EOF, never altered),
// next_offset moves forward unless the file is done, eof means next_offset
// is the size, a text page and its hint fit the budget, and refusals are
// LIMIT_EXCEEDED only. Paging from 0 by next_offset delivers every byte of
// the file once, in order.
func FuzzReadPagesDeliverTheFile(f *testing.F) {
	f.Add([]byte("hé€llo wörld"), uint16(2), uint16(3), uint16(4096), true)
	f.Add([]byte("hé€llo wörld"), uint16(0), uint16(5), uint16(120), false)
	f.Add([]byte("日本語のテキスト"), uint16(1), uint16(1), uint16(200), true)
	f.Add([]byte{0, 0xff, 'a', 0xc3}, uint16(0), uint16(0), uint16(4096), false)
	f.Add(bytes.Repeat([]byte("€"), 400), uint16(0), uint16(1000), uint16(130), true)
	f.Add([]byte("tail\xe2\x82"), uint16(4), uint16(2), uint16(4096), true)
	f.Fuzz(func(t *testing.T, file []byte, offset, limit, budget uint16, trusted bool) {
		trust := sources.Untrusted
		if trusted {
			trust = sources.Trusted
		}
		off := int(offset) % (len(file) + 1)
		lim := int(limit)%2048 + 1
		bud := int(budget) % 8192
		check := func(r *sources.ReadResult) (page []byte, next int, eof bool, ok bool) {
			fitted := !r.Binary || trust == sources.Untrusted
			start := int(r.Offset)
			res, err := renderRead(r, bud)
			if err != nil {
				if code, _ := violation.CodeOf(err); code != violation.LimitExceeded {
					t.Fatalf("refused with %v", err)
				}
				return nil, 0, false, false
			}
			meta := res.Structured.(map[string]any)
			next, eof = int(meta["next_offset"].(int64)), meta["eof"].(bool)
			if meta["offset"].(int64) != int64(start) || next < start || next > len(file) {
				t.Fatalf("offset %d next_offset %d of %d", meta["offset"], next, len(file))
			}
			page = delivered(t, res, trust)
			if !bytes.Equal(page, file[start:next]) {
				t.Fatalf("page [%d,%d) carries %q, the file holds %q", start, next, page, file[start:next])
			}
			if eof != (next == len(file)) {
				t.Fatalf("eof %v at next_offset %d of %d", eof, next, len(file))
			}
			if !eof && next == start {
				t.Fatalf("an empty page at %d before eof: the client would loop", start)
			}
			if fitted && len(res.Blobs) == 0 && len(res.Text)+len(res.UntrustedText) > bud {
				t.Fatalf("page of %d bytes past budget %d", len(res.Text)+len(res.UntrustedText), bud)
			}
			return page, next, eof, true
		}
		check(rawPage(file, off, lim, trust))
		got := []byte{}
		for pos, n := 0, 0; ; n++ {
			if n > len(file)+1 {
				t.Fatalf("paging made no end after %d pages", n)
			}
			page, next, eof, ok := check(rawPage(file, pos, lim, trust))
			if !ok {
				return
			}
			got = append(got, page...)
			if eof {
				break
			}
			pos = next
		}
		if !bytes.Equal(got, file) {
			t.Fatalf("paging delivered %q, the file is %q", got, file)
		}
	})
}
