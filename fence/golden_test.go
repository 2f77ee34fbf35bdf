package fence

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/golden"
)

const noncePlaceholder = "{{NONCE}}"

// TestHostileCorpus wraps every testdata/hostile/*.txt and compares the
// fence, with its nonce replaced by {{NONCE}}, to NAME.golden. Add a case by
// adding a .txt file and running go test ./fence -run HostileCorpus -update.
// Goldens are readable: the fenced text is sanitized by construction.
func TestHostileCorpus(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.txt"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".txt")
		t.Run(name, func(t *testing.T) {
			content, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Wrap(content, Meta{Source: "testdata/hostile/" + name + ".txt", Kind: "test", AttributionID: "att-" + name})
			if err != nil {
				t.Fatal(err)
			}
			assertFence(t, f)
			stats, _ := json.Marshal(f.Stats)
			got := []byte("-- stats --\n" + string(stats) + "\n-- fenced --\n" +
				strings.ReplaceAll(f.Text, f.Nonce, noncePlaceholder) + "\n")
			golden.Check(t, strings.TrimSuffix(in, ".txt")+".golden", got, "go test ./fence -run HostileCorpus -update")
		})
	}
}

// assertFence is every property a Wrap result must have.
func assertFence(t testing.TB, f *Fenced) {
	t.Helper()
	if err := Check(f.Text); err != nil {
		t.Fatalf("Check(Wrap(x).Text) = %v\n%s", err, f.Text)
	}
	if n := strings.Count(f.Text, f.Nonce); n != 2 {
		t.Fatalf("nonce appears %d times, want 2", n)
	}
	if len(f.Nonce) != 2*NonceBytes {
		t.Fatalf("nonce %q is not %d hex digits", f.Nonce, 2*NonceBytes)
	}
	if !strings.Contains(f.Text, "\n"+f.Content+"\n"+closePrefix+f.Nonce+markerEnd) {
		t.Fatal("Content is not the text between the markers")
	}
	if !strings.HasPrefix(f.Text, Notice()+"\n"+openPrefix+f.Nonce+" ") {
		t.Fatal("Text does not start with the notice and the open marker")
	}
	assertClean(t, f.Content)
	if f.Changed != (f.Stats != SanitizeStats{}) {
		t.Fatalf("Changed = %v with stats %+v", f.Changed, f.Stats)
	}
}
