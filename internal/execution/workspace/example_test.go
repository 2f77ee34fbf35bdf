package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/execution/workspace"
)

// A run declares its outputs up front; whatever else it writes is refused.
func ExampleCreate() {
	base, _ := os.MkdirTemp("", "airlock-runs-")
	defer os.RemoveAll(base)

	w, err := workspace.Create(base, "run-42", []string{"summary.txt"}, false)
	if err != nil {
		panic(err)
	}
	// ... the sandboxed pipeline runs and writes in its /out (here a
	// temporary directory), which the sandbox hands back as an os.Root ...
	out, _ := os.MkdirTemp("", "airlock-out-")
	defer os.RemoveAll(out)
	os.WriteFile(filepath.Join(out, "summary.txt"), []byte("rows=3 sum=12\n"), 0o644)
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("undeclared"), 0o644)
	root, err := os.OpenRoot(out)
	if err != nil {
		panic(err)
	}
	defer root.Close()

	c, err := w.CollectFrom(root)
	if err != nil {
		panic(err)
	}
	for _, o := range c.Outputs {
		fmt.Println(o.Name, o.Size, o.SHA256[:12])
	}
	for _, v := range c.Violations {
		fmt.Println(v.Code, v.Path, v.Detail)
	}
	fmt.Println("snapshot", c.SnapshotHash[:12])
	// Output:
	// summary.txt 14 cd256033110b
	// WRITE_ATTEMPT notes.txt undeclared file (discarded)
	// snapshot c932613b937e
}
