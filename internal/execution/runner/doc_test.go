package runner

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocListsTheSteps keeps the package doc honest: its list of what
// happens to a call names, in order, exactly the "step:" markers of run.go
// and then finish.go, so a step added, moved or dropped in the code without
// the doc (or the other way round) fails here.
func TestDocListsTheSteps(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	item := regexp.MustCompile(`(?m)^//   - ([^:]+):`)
	var doc []string
	for _, m := range item.FindAllStringSubmatch(read("doc.go"), -1) {
		doc = append(doc, m[1])
	}
	marker := regexp.MustCompile(`(?m)^\s*// step: (.+?)(?: — .*)?$`)
	var code []string
	for _, file := range []string{"run.go", "finish.go"} {
		for _, m := range marker.FindAllStringSubmatch(read(file), -1) {
			code = append(code, strings.TrimSuffix(m[1], "."))
		}
	}
	if len(doc) < 13 || !slices.Equal(doc, code) {
		t.Errorf("the package doc lists\n\t%s\nthe code marks\n\t%s", strings.Join(doc, "\n\t"), strings.Join(code, "\n\t"))
	}
}
