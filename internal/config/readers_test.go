package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

// TestReaders: a pool and an upstream may say who may see their content;
// a list that could never match a recipient as written, or that is empty
// or unbounded, is refused at its line.
func TestReaders(t *testing.T) {
	const pool = "pools:\n  - id: a\n    description: pool a\n    path: pa\n"
	const rest = "policies:\n  base: {allow: [\"pool.*\"]}\nroles:\n  local: {policy: base, pools: [a]}\nupstreams:\n  - id: mail\n    url: https://mcp.example.com/mcp\n"
	cfg, err := config.Parse("airlock.yaml", []byte(pool+"    readers: [alice@corp.example, \"@alice\"]\n"+rest+"    readers: [alice@corp.example]\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := cfg.Upstream("mail")
	if !slices.Equal(cfg.Pools[0].Readers, []string{"alice@corp.example", "@alice"}) || !slices.Equal(u.Readers, []string{"alice@corp.example"}) {
		t.Fatalf("readers: pool %q, upstream %q", cfg.Pools[0].Readers, u.Readers)
	}
	if cfg, err = config.Parse("airlock.yaml", []byte(pool+rest), t.TempDir()); err != nil || cfg.Pools[0].Readers != nil {
		t.Fatalf("without readers (public): %v %q", err, cfg.Pools[0].Readers)
	}
	many := "[" + strings.Repeat("x@y.example, ", 65) + "z@y.example]"
	for _, tc := range []struct {
		name, pool, upstream string
		line                 int
		want                 string
	}{
		{"empty pool list", "    readers: []\n", "", 5, "readers is empty"},
		{"empty upstream list", "", "    readers: []\n", 12, "readers is empty"},
		{"empty entry", "    readers: [alice@corp.example, \"\"]\n", "", 5, "reader is empty"},
		{"padded entry", "    readers: [\" alice@corp.example\"]\n", "", 5, "leading or trailing space"},
		{"control character", "", "    readers: [\"alice\\u0007@corp.example\"]\n", 12, "control character"},
		{"long entry", "    readers: [" + strings.Repeat("a", 257) + "]\n", "", 5, "longer than 256"},
		{"too many", "", "    readers: " + many + "\n", 12, "at most 64"},
		{"not a list", "    readers: alice@corp.example\n", "", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("airlock.yaml", []byte(pool+tc.pool+rest+tc.upstream), t.TempDir())
			var ye *yamlfile.Error
			if !errors.As(err, &ye) || ye.Line != tc.line {
				t.Fatalf("%v, want an error at line %d", err, tc.line)
			}
			if tc.want != "" && (!errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("%v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}
