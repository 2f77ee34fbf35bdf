//go:build unix

package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/workspace"
)

// TestCollectSyncsOnce: a publication is made durable by one flush of the
// run directory's filesystem, after every byte it must cover is written —
// the copies in published/, its rename and the manifest — and before
// CollectFrom returns; a flush that fails fails the collection (the store
// never names a pool it could lose). Issue 27: the collection used to
// fsync each output, the staging directory, the manifest and the run
// directory (four fsyncs for one output).
func TestCollectSyncsOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outputs []string
		flush   error
	}{
		{"two outputs", []string{"a.csv", "sub/b.txt"}, nil},
		{"no output produced", nil, nil},
		{"flush fails", []string{"a.csv"}, errors.New("EIO")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := create(t, "a.csv", "sub/b.txt")
			for _, o := range tc.outputs {
				put(t, w, o, "content of "+o)
			}
			var calls []string
			workspace.SetPublishSync(t, func(dir string) error {
				calls = append(calls, dir)
				for _, o := range tc.outputs {
					if _, err := os.Stat(filepath.Join(dir, "published", filepath.FromSlash(o))); err != nil {
						t.Errorf("flush before %s was published: %v", o, err)
					}
				}
				if _, err := os.Stat(filepath.Join(dir, "published.sha256")); (err == nil) != (len(tc.outputs) > 0) {
					t.Errorf("flush before the manifest was written (or a manifest without outputs): %v", err)
				}
				return tc.flush
			})
			c, err := w.Collect()
			if len(calls) != 1 || calls[0] != w.Dir() {
				t.Errorf("flushes %q, want one of %s", calls, w.Dir())
			}
			switch {
			case tc.flush != nil && !errors.Is(err, tc.flush):
				t.Errorf("failed flush: Collect = %v, want it to fail with the flush's error", err)
			case tc.flush == nil && (err != nil || len(c.Outputs) != len(tc.outputs)):
				t.Errorf("Collect = %+v, %v", c, err)
			}
		})
	}
}
