package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/testpool"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestPagingDeliversEveryByte pages through files of random sizes with
// random page sizes, under random output limits, and checks that every
// page holds exactly next_offset-offset bytes of the file and that the
// reassembled pages have the file's SHA-256 (issue 10 item 11: a page cut
// by the output limit while next_offset advanced by the full page skipped
// bytes). Trusted text, binary resources and fenced untrusted text all page.
func TestPagingDeliversEveryByte(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	for round := range 4 {
		maxOut := 512 + rng.IntN(6000)
		// Pages as large as the output limit allows (the config refuses
		// larger), so a full page and its hint do not fit uncut.
		maxRead := maxOut - rng.IntN(64)
		trusted, untrusted := map[string][]byte{}, map[string][]byte{}
		for i := range 3 {
			trusted[fmt.Sprintf("text%d.txt", i)] = randomText(rng, rng.IntN(3*maxOut))
		}
		bin := make([]byte, 1+rng.IntN(3*maxOut))
		for i := range bin {
			bin[i] = byte(rng.UintN(256))
		}
		bin[0] = 0
		trusted["blob.bin"] = bin
		for i := range 2 {
			untrusted[fmt.Sprintf("notes%d.txt", i)] = randomPlain(rng, rng.IntN(3*maxOut))
		}
		t.Run(fmt.Sprintf("round%d_out%d_read%d", round, maxOut, maxRead), func(t *testing.T) {
			cfg := fmt.Sprintf(testConfig, "local")
			cfg = strings.Replace(cfg, "  max_read_bytes: 4096\n  max_output_bytes: 16384\n",
				fmt.Sprintf("  max_read_bytes: %d\n  max_output_bytes: %d\n", maxRead, maxOut), 1)
			tdir, udir := poolDir(t, trusted), poolDir(t, untrusted)
			cfg = strings.Replace(cfg, "pools:\n", fmt.Sprintf("pools:\n  - {id: pt, description: t, path: %q, trust: trusted}\n  - {id: pu, description: u, path: %q, trust: untrusted}\n", tdir, udir), 1)
			cfg = strings.Replace(cfg, "local: {policy: base, pools: [alpha, beta]}", "local: {policy: base, pools: [alpha, beta, pt, pu]}", 1)
			f := newFixtureConfig(t, cfg)
			c := f.connect(t)
			for name, data := range trusted {
				pageThrough(t, c, rng, "pt", name, data, maxRead)
			}
			for name, data := range untrusted {
				pageThrough(t, c, rng, "pu", name, data, maxRead)
			}
		})
	}
}

func pageThrough(t *testing.T, c *client.Client, rng *rand.Rand, pool, name string, want []byte, maxRead int) {
	t.Helper()
	var got []byte
	offset := 0
	for pages := 0; ; pages++ {
		if pages > len(want)+2 {
			t.Fatalf("%s/%s: no progress after %d pages", pool, name, pages)
		}
		args := map[string]any{"pool": pool, "path": name, "offset": offset}
		if l := rng.IntN(2*maxRead + 1); l > 0 {
			args["limit"] = l
		}
		res := call(t, c, "read_pool_file", args)
		if res.IsError {
			t.Fatalf("%s/%s at %d: %s", pool, name, offset, text(res))
		}
		sc := structured(t, res)
		next, eof := int(sc["next_offset"].(float64)), sc["eof"] == true
		page := pageBytes(t, res, sc, eof)
		if len(page) != next-offset {
			t.Fatalf("%s/%s at %d: next_offset %d but %d bytes delivered", pool, name, offset, next, len(page))
		}
		if !bytes.Equal(page, want[offset:next]) {
			t.Fatalf("%s/%s at %d: page differs from the file", pool, name, offset)
		}
		got = append(got, page...)
		offset = next
		if eof {
			break
		}
	}
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("%s/%s: reassembled SHA-256 differs", pool, name)
	}
}

// pageBytes extracts the file bytes one read_pool_file result delivers.
func pageBytes(t *testing.T, res *mcp.CallToolResult, sc map[string]any, eof bool) []byte {
	t.Helper()
	out := text(res)
	if strings.Contains(out, "[output truncated") {
		t.Fatalf("page truncated by the output limit: %q", out)
	}
	for _, ct := range res.Content {
		if e, ok := ct.(mcp.EmbeddedResource); ok {
			b, err := base64.StdEncoding.DecodeString(e.Resource.(mcp.BlobResourceContents).Blob)
			must(t, err)
			return b
		}
	}
	if uc, ok := sc["untrusted_content"].(string); ok {
		const open = "<<<UNTRUSTED_EXTERNAL_CONTENT nonce="
		i := strings.Index(uc, open)
		j := strings.IndexByte(uc[i:], '\n')
		k := strings.LastIndex(uc, "\n<<<END_")
		return []byte(uc[i+j+1 : k])
	}
	if !eof {
		i := strings.LastIndex(out, "\n[bytes ")
		if i < 0 {
			t.Fatalf("no paging hint: %q", out)
		}
		out = out[:i]
	}
	return []byte(out)
}

func poolDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	var m strings.Builder
	for name, data := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		sum := sha256.Sum256(data)
		fmt.Fprintf(&m, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	testpool.WriteFile(t, dir, "SHA256SUMS", m.String())
	return dir
}

// randomText is valid UTF-8 with one- to four-byte runes, so pages must end
// on rune boundaries.
func randomText(rng *rand.Rand, n int) []byte {
	runes := []rune("abcdefghij \nééé日本語😀🚀")
	var b []byte
	for len(b) < n {
		b = append(b, string(runes[rng.IntN(len(runes))])...)
	}
	return b
}

// randomPlain is text the fence sanitizer leaves as it is (no U, no [, no
// controls), so fenced pages can be compared byte for byte.
func randomPlain(rng *rand.Rand, n int) []byte {
	const alphabet = "abcdefghijklmnopqrstvwxyz ABCDEFGHIJKLMNOPQRSTVWXYZ0123456789.,;:!?\n\t"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}
