package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// readmeBlock is one shell command from a README.md code block marked
// `<!-- runnable -->`, continuation lines joined.
type readmeBlock struct {
	line int
	cmd  string
}

// runnableCommands extracts the commands of every ```sh block that
// follows a `<!-- runnable -->` line.
func runnableCommands(t *testing.T) []readmeBlock {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeBlock
	sc := bufio.NewScanner(f)
	marked, in, n, start := false, false, 0, 0
	var cur strings.Builder
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "<!-- runnable -->":
			marked = true
		case marked && line == "```sh":
			in, marked = true, false
		case in && line == "```":
			in = false
		case in:
			if cur.Len() == 0 {
				start = n
			}
			if s, ok := strings.CutSuffix(line, "\\"); ok {
				cur.WriteString(s)
				continue
			}
			cur.WriteString(line)
			if c := strings.TrimSpace(cur.String()); c != "" && !strings.HasPrefix(c, "#") {
				out = append(out, readmeBlock{line: start, cmd: c})
			}
			cur.Reset()
		case strings.TrimSpace(line) != "":
			marked = false
		}
	}
	return out
}

// readmeSkips are the runnable commands this test does not run, each with
// why. Everything else must run as written.
var readmeSkips = map[string]string{
	"make build": "the test builds bin/airlock exactly so (CGO_ENABLED=0 go build -o bin/airlock .) before running the rest",
	"CGO_ENABLED=0 go build -o bin/airlock .":                        "that is how the test built bin/airlock",
	"CGO_ENABLED=0 go install github.com/airlock-dev/airlock@latest": "needs the network and writes to $GOBIN",
}

// TestReadmeCommands runs every runnable README command, in order, with
// sh from a fresh copy of the files they use, a fresh state directory and
// HOME, and bin/airlock built without cgo: a command that fails fails the
// test (issue 16: documented paths that did not exist, commands that did
// not run).
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmds := runnableCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("only %d runnable commands found: are the <!-- runnable --> markers gone?", len(cmds))
	}
	root := t.TempDir()
	gobuild.Build(t, filepath.Join(root, "bin", "airlock"), ".")
	// The files README commands name, as a fresh clone has them.
	for _, dir := range []string{"testdata", "internal/config/demo", "docs"} {
		cp := exec.Command("cp", "-r", dir, filepath.Join(root, dir))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, dir)), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := cp.CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", dir, err, out)
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "AIRLOCK_STATE=" + filepath.Join(root, "state")}
	for _, c := range cmds {
		if why, ok := readmeSkips[strings.TrimSpace(strings.SplitN(c.cmd, "#", 2)[0])]; ok {
			t.Logf("README.md:%d: skipped %q: %s", c.line, c.cmd, why)
			continue
		}
		sh := exec.Command("sh", "-ec", c.cmd)
		sh.Dir, sh.Env = root, env
		if out, err := sh.CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: %s\n%v\n%s", c.line, c.cmd, err, out)
		}
	}
}

// TestReadmeErrorTable: the README's table of refusal codes names exactly
// the codes declared in internal/kit/violation/violation.go.
func TestReadmeErrorTable(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	table := string(data)
	start := strings.Index(table, "| code | meaning |")
	if start < 0 {
		t.Fatal("README.md has no | code | meaning | table")
	}
	table = table[start:]
	if end := strings.Index(table, "\n\n"); end > 0 {
		table = table[:end]
	}
	var documented []string
	codeRE := regexp.MustCompile("`([A-Z_]+)`")
	for _, row := range strings.Split(table, "\n")[2:] {
		cell := strings.SplitN(strings.TrimPrefix(row, "|"), "|", 2)[0]
		for _, m := range codeRE.FindAllStringSubmatch(cell, -1) {
			documented = append(documented, m[1])
		}
	}
	declared := violationCodes(t)
	slices.Sort(documented)
	slices.Sort(declared)
	for _, c := range declared {
		if !slices.Contains(documented, c) {
			t.Errorf("violation code %s is not in README.md's code table", c)
		}
	}
	for _, c := range documented {
		if !slices.Contains(declared, c) {
			t.Errorf("README.md's code table lists %s, which internal/kit/violation/violation.go does not declare", c)
		}
	}
	if dup := slices.Compact(slices.Clone(documented)); len(dup) != len(documented) {
		t.Errorf("README.md's code table lists a code twice: %v", documented)
	}
}

// violationCodes parses internal/kit/violation/violation.go for its constants of type
// Code.
func violationCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("internal", "kit", "violation", "violation.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					codes = append(codes, s)
				}
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("found only %d codes in violation.go", len(codes))
	}
	return codes
}
