package derived

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/sources"
)

// commitLog is a store that records which writes Add makes: a durable
// commit of its own (UpdateContext) or a deferred one.
type commitLog struct {
	usage    map[string][]byte
	cx       contexts.Context
	durable  []string
	deferred []string
}

func (c *commitLog) UpdateUsage(_ context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error {
	c.deferred = append(c.deferred, "usage") // store.DB.UpdateUsage is deferred
	out, err := fn(c.usage)
	for k, v := range out {
		c.usage[k] = v
	}
	return err
}

func (c *commitLog) UpdateContext(_ context.Context, _ string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	c.durable = append(c.durable, "context")
	return &c.cx, mutate(&c.cx)
}

func (c *commitLog) UpdateContextDeferred(_ context.Context, _ string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	c.deferred = append(c.deferred, "context")
	return &c.cx, mutate(&c.cx)
}

func (c *commitLog) Usage(_ context.Context, key string) ([]byte, error) { return c.usage[key], nil }

// TestAddDefersItsCommits: registering a run's output pool makes no
// durable commit of its own — the call's audit record, committed after it
// and before the answer, makes both writes durable — so a run's finish
// costs one fsync of the store, not two (issue 27). Before, the context
// update was a durable commit (UpdateContext).
func TestAddDefersItsCommits(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "published")
	if err := os.Mkdir(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	data := []byte("region,units\n")
	if err := os.WriteFile(filepath.Join(pub, "summary.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	manifest := filepath.Join(dir, "published.sha256")
	if err := os.WriteFile(manifest, []byte(hex.EncodeToString(sum[:])+"  summary.csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := sources.OpenRegistry(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &commitLog{usage: map[string][]byte{}}
	p := New(st, reg, slog.New(slog.DiscardHandler), time.Now, func() Retention { return Retention{} })
	d := &toolkit.DerivedPool{ID: "run-1", Dir: pub, Manifest: manifest, Trust: "trusted", Description: "outputs"}
	if err := p.Add(context.Background(), "ctx-1", d); err != nil {
		t.Fatal(err)
	}
	if len(st.durable) != 0 {
		t.Errorf("Add made durable commits of its own: %v", st.durable)
	}
	if len(st.deferred) != 2 || st.cx.Env[EnvKey] != "run-1" {
		t.Errorf("deferred writes %v, context env %v; want the usage entry and the context's list", st.deferred, st.cx.Env)
	}
}
