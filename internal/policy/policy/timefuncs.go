package policy

import (
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// expr calls a method such as now.Hour() through reflection, which costs
// about as much as the rest of a typical condition together and allocates a
// method value each time. Office-hours conditions are common, so the
// zero-argument int methods of now are rewritten at compile time into calls
// of plain functions with the same result. Authors write now.Hour() as
// usual; only methods whose result type is a plain int are rewritten, so
// now.Month().String() and now.Weekday() keep their types.
var nowMethods = map[string]func(time.Time) int{
	"Hour":       time.Time.Hour,
	"Minute":     time.Time.Minute,
	"Second":     time.Time.Second,
	"Nanosecond": time.Time.Nanosecond,
	"Year":       time.Time.Year,
	"YearDay":    time.Time.YearDay,
	"Day":        time.Time.Day,
}

// nowFuncPrefix names the rewritten functions. A condition could call them
// directly; that is harmless, they only read the time they are given.
const nowFuncPrefix = "airlock_now_"

func nowFunctions() []expr.Option {
	opts := []expr.Option{expr.Patch(nowPatcher{})}
	for name, m := range nowMethods {
		opts = append(opts, expr.Function(nowFuncPrefix+name, func(params ...any) (any, error) {
			return m(params[0].(time.Time)), nil
		}, new(func(time.Time) int)))
	}
	return opts
}

type nowPatcher struct{}

func (nowPatcher) Visit(node *ast.Node) {
	call, ok := (*node).(*ast.CallNode)
	if !ok || len(call.Arguments) != 0 {
		return
	}
	m, ok := call.Callee.(*ast.MemberNode)
	if !ok || m.Optional {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	prop, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 || id.Value != "now" || nowMethods[prop.Value] == nil {
		return
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: nowFuncPrefix + prop.Value},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: "now"}},
	})
}
