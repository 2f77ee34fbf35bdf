package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/sources"
)

// defaultPipelinePath is where a bare argv[0] is looked up when the
// pipeline's env sets no PATH; it is the sandbox's default PATH.
const defaultPipelinePath = "/usr/local/bin:/usr/bin:/bin"

// ErrMissing: a file or directory the configuration names is not there (or
// is not what it must be).
var ErrMissing = errors.New("missing on disk")

// CheckDeep is what `airlock config check` adds to [Load]: every pool
// directory and manifest exists, every pipeline program and extra file
// exists (a program must be an executable regular file), every stdio
// upstream's program and read_only path exists, and every policy
// capability pattern matches a capability Airlock has — a literal
// pipeline.run:<name> a declared pipeline — and every rule can fire
// (policy.CheckReachable). Load itself touches no disk
// beyond the file, so serve still starts from a config whose pools are
// mounted later; check refuses up front what serve would refuse
// (cli/cli_test.go: TestConfigCheckRefusesWithLine). All problems are
// reported, each with file:line.
func (c *Config) CheckDeep() error {
	var errs []error
	for i, p := range c.Pools {
		base := fmt.Sprintf("$.pools[%d]", i)
		if err := isDir(p.Path); err != nil {
			errs = append(errs, c.at(base+".path", fmt.Errorf("pool %q directory: %w", p.ID, err)))
			continue
		}
		m := p.Manifest
		if m == "" {
			m = sources.DefaultManifestName
		}
		if !filepath.IsAbs(m) {
			m = filepath.Join(p.Path, m)
		}
		if err := isFile(m, false); err != nil {
			at := base + ".manifest"
			if p.Manifest == "" {
				at = base + ".path"
			}
			errs = append(errs, c.at(at, fmt.Errorf("pool %q manifest (make one with `airlock pools manifest`): %w", p.ID, err)))
		}
	}
	names := make([]string, 0, len(c.Pipelines))
	for i, p := range c.Pipelines {
		names = append(names, p.Name)
		base := fmt.Sprintf("$.pipelines[%d]", i)
		if len(p.Argv) > 0 {
			if err := findProgram(p.Argv[0], p.Env["PATH"]); err != nil {
				errs = append(errs, c.at(base+".argv[0]", fmt.Errorf("pipeline %q program: %w", p.Name, err)))
			}
		}
		for j, f := range p.Files {
			if _, err := os.Stat(f); err != nil {
				errs = append(errs, c.at(fmt.Sprintf("%s.files[%d]", base, j), fmt.Errorf("pipeline %q file: %w", p.Name, missing(f))))
			}
		}
	}
	errs = append(errs, c.checkUpstreamFiles()...)
	if err := policy.CheckCapabilities(c.file, c.data, c.Policies, names); err != nil {
		errs = append(errs, err)
	}
	if set, err := c.PolicySet(); err == nil { // Load compiled it already
		if err := policy.CheckReachable(c.file, c.data, set); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkUpstreamFiles checks a stdio upstream's program as the sandbox will
// run it, and its read_only paths: a missing one passed config check and
// only failed later, at review or at the first call, as an upstream that
// "could not be listed" (issue 24 item 6).
func (c *Config) checkUpstreamFiles() []error {
	var errs []error
	for i, u := range c.Upstreams {
		if !u.Stdio() {
			continue
		}
		base := fmt.Sprintf("$.upstreams[%d]", i)
		// A bare name is looked up on the PATH the sandbox gives it: the
		// configured one when it can be read here, else the default.
		path, bare := "", true
		if src, ok := u.Env["PATH"]; ok {
			v, err := src.Read()
			path, bare = v, err == nil && v != ""
		}
		if bare || strings.Contains(u.Command[0], "/") {
			if err := findProgram(u.Command[0], path); err != nil {
				errs = append(errs, c.at(base+".command[0]", fmt.Errorf("upstream %q program: %w", u.ID, err)))
			}
		}
		for j, p := range u.ReadOnly {
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, c.at(fmt.Sprintf("%s.read_only[%d]", base, j), fmt.Errorf("upstream %q read_only path: %w", u.ID, missing(p))))
			}
		}
	}
	return errs
}

// missing says p is not there, with the nearest name in its directory when
// one is close ("did you mean").
func missing(p string) error {
	var names []string
	if entries, err := os.ReadDir(filepath.Dir(p)); err == nil {
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	if s := policy.Closest(filepath.Base(p), names); s != "" {
		return fmt.Errorf("%s does not exist (did you mean %s?): %w", p, filepath.Join(filepath.Dir(p), s), ErrMissing)
	}
	return fmt.Errorf("%s does not exist: %w", p, ErrMissing)
}

func isDir(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return missing(p)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory: %w", p, ErrMissing)
	}
	return nil
}

func isFile(p string, exec bool) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return missing(p)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: %w", p, ErrMissing)
	case exec && fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable: %w", p, ErrMissing)
	}
	return nil
}

// findProgram checks argv[0] as the sandbox will run it: an absolute path
// as it is, a bare name on PATH. A relative path with a slash is relative
// to the run's output directory, which does not exist yet: not checked.
func findProgram(prog, path string) error {
	switch {
	case filepath.IsAbs(prog):
		return isFile(prog, true)
	case strings.Contains(prog, "/"):
		return nil
	}
	if path == "" {
		path = defaultPipelinePath
	}
	for _, dir := range filepath.SplitList(path) {
		if dir != "" && isFile(filepath.Join(dir, prog), true) == nil {
			return nil
		}
	}
	return fmt.Errorf("%s not found on PATH %s: %w", prog, path, ErrMissing)
}
