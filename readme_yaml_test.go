package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

// shippedYAML are the configuration files a user reads and copies: the
// embedded demo, the example policy, the worked examples in docs/. (init's
// output is checked by cli's TestInitServesItsPools golden and is written
// through yamlfile.Format.)
var shippedYAML = []string{
	"internal/config/demo/airlock.yaml",
	"testdata/policy/example.yaml",
	"docs/notify-hooks.yaml",
	"docs/upstreams.yaml",
	"docs/scale-out/airlock.yaml",
}

// readmeYAMLBlocks returns every ```yaml block of README.md (an indented
// one without its indentation), by its first line.
func readmeYAMLBlocks(t *testing.T) map[int]string {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(f)
	n, start, indent := 0, 0, ""
	var cur *strings.Builder
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			indent, start, cur = line[:strings.Index(line, "`")], n+1, &strings.Builder{}
		case cur != nil && line == indent+"```":
			out[start] = cur.String()
			cur = nil
		case cur != nil:
			cur.WriteString(strings.TrimPrefix(line, indent) + "\n")
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d yaml blocks found in README.md", len(out))
	}
	return out
}

// TestShippedYAMLIsFormatted (issue 24 item 7): there is one canonical
// YAML style, `airlock policy fmt`'s, and the README's examples, the demo
// and the shipped configuration files are in it — fmt --check used to call
// the README's own style and the demo "not formatted".
func TestShippedYAMLIsFormatted(t *testing.T) {
	check := func(name string, data []byte) {
		t.Helper()
		got, err := yamlfile.Format(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if string(got) != string(data) {
			t.Errorf("%s is not in the canonical style; airlock policy fmt writes:\n%s", name, got)
		}
	}
	for _, f := range shippedYAML {
		data, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		check(f, data)
	}
	for line, block := range readmeYAMLBlocks(t) {
		check("README.md:"+strconv.Itoa(line), []byte(block))
	}
}
