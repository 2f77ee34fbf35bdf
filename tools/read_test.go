package tools

import (
	"bytes"
	"testing"

	"github.com/airlock-dev/airlock/sources"
)

// TestPagesNeverSplitACharacterAsText: a page whose limit ends inside a
// UTF-8 character stops before it (next_offset on the character), and a
// page that is not whole UTF-8 (an offset inside a character, or a limit
// under one) travels as bytes, not as text JSON would turn into U+FFFD.
func TestPagesNeverSplitACharacterAsText(t *testing.T) {
	file := []byte("hé€llo") // h, é (2 bytes), € (3 bytes), l, l, o
	page := func(offset, limit int) *sources.ReadResult {
		end := min(offset+limit, len(file))
		return &sources.ReadResult{PoolID: "p", Path: "f.txt", Trust: sources.Trusted, Offset: int64(offset),
			NextOffset: int64(end), EOF: end == len(file), Size: int64(len(file)), Data: file[offset:end], MIMEType: "text/plain; charset=utf-8"}
	}
	cases := []struct {
		name          string
		offset, limit int
		wantNext      int64
		wantBlob      bool
		wantData      []byte
	}{
		{"limit ends inside é", 0, 2, 1, false, []byte("h")},
		{"limit ends inside €", 0, 5, 3, false, []byte("hé")},
		{"whole characters", 0, 6, 6, false, []byte("hé€")},
		{"offset inside é", 2, 4, 6, true, file[2:6]},
		{"limit under one character", 3, 1, 4, true, file[3:4]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := renderRead(page(tc.offset, tc.limit), 4096)
			if err != nil {
				t.Fatal(err)
			}
			next := res.Structured.(map[string]any)["next_offset"].(int64)
			if next != tc.wantNext {
				t.Fatalf("next_offset %d, want %d", next, tc.wantNext)
			}
			if tc.wantBlob {
				if len(res.Blobs) != 1 || !bytes.Equal(res.Blobs[0].Data, tc.wantData) {
					t.Fatalf("want the bytes as a blob, got %+v", res)
				}
				return
			}
			if len(res.Blobs) != 0 || !bytes.HasPrefix([]byte(res.Text), tc.wantData) || bytes.ContainsRune([]byte(res.Text), '\uFFFD') {
				t.Fatalf("text %q, want %q first", res.Text, tc.wantData)
			}
		})
	}
}
