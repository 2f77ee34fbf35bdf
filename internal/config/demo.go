package config

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed demo
var demoFS embed.FS

// DemoFile is the name errors in the embedded demo configuration carry.
const DemoFile = "demo/airlock.yaml"

// Demo writes the embedded demo pools under dir (replacing what a previous
// run left there, so the manifests always match) and returns the embedded
// demo configuration with its paths resolved against dir.
func Demo(dir string) (*Config, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clearing demo dir: %w", err)
	}
	err := fs.WalkDir(demoFS, "demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("demo", filepath.FromSlash(p))
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := demoFS.ReadFile(p)
		if err != nil {
			return err
		}
		// Pool files are read-only (the demo pools are sources, not
		// scratch space) and readable by all: the pipeline sandbox's user
		// reads them, so a umask of 077 must not cut them to 0400.
		if err := os.WriteFile(target, data, 0o444); err != nil {
			return err
		}
		return os.Chmod(target, 0o444)
	})
	if err != nil {
		return nil, fmt.Errorf("writing demo pools: %w", err)
	}
	data, err := demoFS.ReadFile(DemoFile)
	if err != nil {
		return nil, fmt.Errorf("reading embedded demo config: %w", err)
	}
	return Parse(DemoFile, data, dir)
}
