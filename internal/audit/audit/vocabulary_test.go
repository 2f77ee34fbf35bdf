package audit_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

// constsOf returns the constants of type typ declared in file, with
// whether each has a doc comment, and their string values.
func constsOf(t *testing.T, file, typ string) (doc map[string]bool, value map[string]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	doc, value = map[string]bool{}, map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for i, n := range vs.Names {
				doc[n.Name] = vs.Doc != nil && strings.TrimSpace(vs.Doc.Text()) != ""
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					value[n.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	if len(doc) == 0 {
		t.Fatalf("no constants of type %s in %s", typ, file)
	}
	return doc, value
}

// TestEveryKindHasAGolden: each Kind in events.go is documented there and
// built by some case of the golden table, so no kind is declared without
// its bytes being pinned.
func TestEveryKindHasAGolden(t *testing.T) {
	doc, value := constsOf(t, "events.go", "Kind")
	built := map[string]bool{}
	for _, c := range cases() {
		built[c.rec.Capability] = true
	}
	for name, v := range value {
		if !doc[name] {
			t.Errorf("%s has no doc line in events.go", name)
		}
		if !built[v] {
			t.Errorf("%s (%q) is built by no case of the golden table", name, v)
		}
	}
	// And every non-call record of the table is of a declared kind.
	kinds := map[string]bool{}
	for _, v := range value {
		kinds[v] = true
	}
	for _, c := range cases() {
		if c.rec.Tool == "" && !kinds[c.rec.Capability] {
			t.Errorf("%s: capability %q is no Kind", c.name, c.rec.Capability)
		}
	}
}

// TestEveryConstructorHasAGolden: each exported function of events.go
// (the constructors) has a case in the golden table.
func TestEveryConstructorHasAGolden(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ctors []string
	for _, c := range cases() {
		ctors = append(ctors, c.ctor)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() && !slices.Contains(ctors, fn.Name.Name) {
			t.Errorf("constructor %s has no case in the golden table", fn.Name.Name)
		}
	}
}

// documentedElsewhere lists outcomes no constructor nor OutcomeOf
// produces, each with where it is set. Empty today: every outcome is.
var documentedElsewhere = map[audit.Outcome]string{}

// TestEveryOutcomeIsProduced: each Outcome constant is documented, and is
// produced by a constructor of the table or by OutcomeOf (a call's
// ending), or is listed in documentedElsewhere with where it is set.
func TestEveryOutcomeIsProduced(t *testing.T) {
	doc, value := constsOf(t, "record.go", "Outcome")
	produced := map[audit.Outcome]bool{}
	for _, c := range cases() {
		produced[c.rec.Outcome] = true
	}
	for _, code := range []violation.Code{violation.PolicyDenied, violation.Internal, violation.Cancelled, violation.PathOutsidePools} {
		produced[audit.OutcomeOf(code)] = true
	}
	for name, v := range value {
		o := audit.Outcome(v)
		if !doc[name] {
			t.Errorf("%s has no doc comment", name)
		}
		if !o.Valid() {
			t.Errorf("%s is not Valid", name)
		}
		if !produced[o] && documentedElsewhere[o] == "" {
			t.Errorf("%s is produced by no constructor and documented nowhere", name)
		}
	}
	if audit.Outcome("finished").Valid() || audit.Outcome("").Valid() {
		t.Error("an unknown outcome is Valid")
	}
}

// TestLeaf: the package imports only the standard library and
// internal/kit, so that reading the trail needs nothing that writes it.
func TestLeaf(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
			if !std && !strings.HasPrefix(p, "github.com/airlock-dev/airlock/internal/kit/") {
				t.Errorf("%s imports %s: package audit may import only the standard library and internal/kit", name, p)
			}
		}
	}
}
