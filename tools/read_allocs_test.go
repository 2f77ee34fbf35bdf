package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/sources"
)

// TestRenderReadBuildsThePageOnce: a trusted page that is not the last one
// is copied into its text once, with its hint, and the hint is built once
// (issue 27: the page was copied twice and the hint formatted twice, per
// call). A middle page may cost one allocation more than the last page —
// the hint — and the trusted text is the page, exactly.
func TestRenderReadBuildsThePageOnce(t *testing.T) {
	file := []byte(strings.Repeat("airlock ", 4096)) // 32 KiB of text
	page := func(end int) *sources.ReadResult {
		return &sources.ReadResult{PoolID: "p", Path: "f.txt", Trust: sources.Trusted, Offset: 0, NextOffset: int64(end),
			EOF: end == len(file), Size: int64(len(file)), Data: file[:end], MIMEType: "text/plain; charset=utf-8"}
	}
	allocs := func(end int) float64 {
		return testing.AllocsPerRun(50, func() {
			if _, err := renderRead(page(end), 1<<20); err != nil {
				t.Fatal(err)
			}
		})
	}
	last, middle := allocs(len(file)), allocs(1000)
	if middle > last+1 {
		t.Errorf("a middle page costs %v allocations, the last page %v: want at most one more (its hint)", middle, last)
	}
	res, err := renderRead(page(1000), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantHint := fmt.Sprintf("[bytes %d-%d of %d; call read_pool_file with offset=%d for more]", 0, 1000, len(file), 1000)
	if res.TrustedText != string(file[:1000]) || res.Text != string(file[:1000])+"\n"+wantHint {
		t.Errorf("text %q…, trusted text %d bytes: want the page and its hint, and the page", res.Text[max(0, len(res.Text)-80):], len(res.TrustedText))
	}
}
