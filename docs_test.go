package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documents that name tests or files as the proof of a claim or the
// source of a figure: SECURITY.md's invariants table above all, README,
// BENCHMARKS.md (whose dated sections say so in words, without a stale
// citation, when what they measured is gone) and e2e/README.md. A test that is renamed, moved or merged into
// another file leaves its citation pointing at nothing, and a reader
// checking a security claim finds no proof (293faa5 merged
// server/hostile_pipeline_test.go into server/pipeline_test.go and
// SECURITY.md kept citing the old file). These tests keep the citations
// true.
var citingDocs = []string{"SECURITY.md", "README.md", "BENCHMARKS.md", "e2e/README.md"}

var (
	// citedTestName: a Go test, fuzz target, benchmark or example.
	citedTestName = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*`)
	// citedSourcePath: a backticked repository path of Go or e2e code,
	// whole (server/edge.go) or its tail (confine/handoff.go,
	// tests/stdio.test.mjs).
	citedSourcePath = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:go|mjs))`")
	// citedTestsOfFile: "`a_test.go`: TestA, TestB (what they show); …" —
	// the names that follow a test file, up to the next clause.
	citedTestsOfFile = regexp.MustCompile("`([^`\\s]+_test\\.go)`: ([^;|`]+)")
	parenthesised    = regexp.MustCompile(`\([^()]*\)`)
)

// trackedFiles lists the checkout's files, or skips outside a checkout.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	return strings.Fields(string(out))
}

// resolveCited returns the tracked files a cited path names: the path
// itself, or every file whose path ends in it.
func resolveCited(files []string, cited string) []string {
	var out []string
	for _, f := range files {
		if f == cited || strings.HasSuffix(f, "/"+cited) {
			out = append(out, f)
		}
	}
	return out
}

// goFuncs reads the named files' top-level function names.
func goFuncs(t *testing.T, paths []string) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ([A-Za-z0-9_]+)\(`)
	names := map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
	}
	return names
}

// TestDocsCiteTestsThatExist: every test a citing document names is a
// function of the module's test files — a name followed by `*` is a
// pattern and needs one function it matches.
func TestDocsCiteTestsThatExist(t *testing.T) {
	files := trackedFiles(t)
	var tests []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			tests = append(tests, f)
		}
	}
	defined := goFuncs(t, tests)
	for _, doc := range citingDocs {
		text := readDoc(t, doc)
		for _, loc := range citedTestName.FindAllStringIndex(text, -1) {
			name := text[loc[0]:loc[1]]
			if defined[name] {
				continue
			}
			if loc[1] < len(text) && text[loc[1]] == '*' && hasPrefixedKey(defined, name) {
				continue
			}
			t.Errorf("%s names %s, which no test file defines: renamed or removed? Cite the test that proves the claim now.", doc, name)
		}
	}
}

// TestDocsCiteFilesThatExist: every Go or e2e source path a citing
// document names in backticks is a tracked file (or the tail of one).
func TestDocsCiteFilesThatExist(t *testing.T) {
	files := trackedFiles(t)
	for _, doc := range citingDocs {
		for _, m := range citedSourcePath.FindAllStringSubmatch(readDoc(t, doc), -1) {
			if len(resolveCited(files, m[1])) == 0 {
				t.Errorf("%s cites `%s`, which is not in the repository: moved or merged? Cite where it is now.", doc, m[1])
			}
		}
	}
}

// TestDocsCiteTestsInTheirFiles: where a document says which file holds
// a test ("`x_test.go`: TestA, TestB"), the file does.
func TestDocsCiteTestsInTheirFiles(t *testing.T) {
	files := trackedFiles(t)
	for _, doc := range citingDocs {
		for _, m := range citedTestsOfFile.FindAllStringSubmatch(readDoc(t, doc), -1) {
			paths := resolveCited(files, m[1])
			if len(paths) == 0 {
				t.Errorf("%s cites `%s`, which is not in the repository", doc, m[1])
				continue
			}
			defined := goFuncs(t, paths)
			for _, name := range citedTestName.FindAllString(withoutAsides(m[2]), -1) {
				if !defined[name] {
					t.Errorf("%s says `%s` holds %s; it does not (%s)", doc, m[1], name, strings.Join(paths, ", "))
				}
			}
		}
	}
}

// TestCitationChecksCatchStaleness is a test of the tests above: the
// citation that was stale, and a made-up one, are caught.
func TestCitationChecksCatchStaleness(t *testing.T) {
	files := trackedFiles(t)
	if got := resolveCited(files, "server/hostile_pipeline_test.go"); len(got) != 0 {
		t.Fatalf("the merged file is back: %v", got)
	}
	if got := resolveCited(files, "confine/handoff.go"); !slices.Equal(got, []string{"internal/execution/sandbox/confine/handoff.go"}) {
		t.Fatalf("a cited tail resolves to %v", got)
	}
	m := citedTestsOfFile.FindStringSubmatch("| `server/pipeline_test.go`: TestHostilePipelinesEndToEnd (\"fill (the) disk\"), TestNoSuchThing; `x_test.go`: TestOther |")
	if m == nil || m[1] != "server/pipeline_test.go" {
		t.Fatalf("parsed %q", m)
	}
	names := citedTestName.FindAllString(withoutAsides(m[2]), -1)
	if !slices.Equal(names, []string{"TestHostilePipelinesEndToEnd", "TestNoSuchThing"}) {
		t.Fatalf("names %v", names)
	}
	defined := goFuncs(t, resolveCited(files, m[1]))
	if !defined["TestHostilePipelinesEndToEnd"] || defined["TestNoSuchThing"] {
		t.Fatalf("server/pipeline_test.go's functions misread")
	}
}

// withoutAsides drops parenthesised text (nested too): what a test shows,
// not which tests.
func withoutAsides(s string) string {
	for {
		next := parenthesised.ReplaceAllString(s, "")
		if next == s {
			return s
		}
		s = next
	}
}

func hasPrefixedKey(m map[string]bool, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
