package comm

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencies keeps comm a leaf: it performs I/O for the runner and
// must not reach the runner, the tools, the store or the sandbox (only
// violation, for the error codes, urlnorm and strictjson, for an upstream
// MCP server's answers, are used from the module), nor start
// processes itself. (modernc.org/libc imports os/exec for system(3); SQLite
// never calls it, and the store shares that dependency.)
func TestDependencies(t *testing.T) {
	list := func(format string, deps bool) []string {
		args := []string{"list", "-f", format}
		if deps {
			args = append(args, "-deps")
		}
		out, err := exec.Command("go", append(args, ".")...).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		return strings.Fields(string(out))
	}
	if slices.Contains(list(`{{join .Imports " "}}`, false), "os/exec") {
		t.Error("comm imports os/exec")
	}
	const module = "github.com/airlock-dev/airlock/"
	allowed := []string{"internal/kit/violation", "internal/kit/urlnorm", "internal/kit/strictjson", "internal/execution/comm"}
	for _, dep := range list(`{{.ImportPath}}`, true) {
		if strings.HasPrefix(dep, module) && !slices.Contains(allowed, strings.TrimPrefix(dep, module)) {
			t.Errorf("comm depends on %s", dep)
		}
	}
}
