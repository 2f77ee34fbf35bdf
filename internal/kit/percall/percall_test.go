package percall

import (
	"context"
	"testing"
)

func TestMemo(t *testing.T) {
	if _, ok := From(context.Background()).Load(); ok {
		t.Fatal("a context without a memo holds something")
	}
	ctx := With(context.Background())
	m := From(ctx)
	if _, ok := m.Load(); ok {
		t.Fatal("a new memo holds something")
	}
	m.Store(7)
	if v, ok := From(ctx).Load(); !ok || v != 7 {
		t.Fatalf("Load = %v, %v", v, ok)
	}
	m.Forget()
	if _, ok := m.Load(); ok {
		t.Fatal("a forgotten memo holds something")
	}
	if _, ok := From(With(ctx)).Load(); ok {
		t.Fatal("a nested call shares its caller's memo")
	}
}
