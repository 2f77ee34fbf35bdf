package sources

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestContextMethodSetIsFrozen fails when someone adds a method to *Context.
// A new method must not be able to add, remove or alter bound pools; review
// it against that rule, then add it here.
func TestContextMethodSetIsFrozen(t *testing.T) {
	want := []string{"AccessLog", "ID", "List", "PoolPath", "Pools", "Read", "Usage", "VerifyPool", "VerifyUnchanged"}
	typ := reflect.TypeFor[*Context]()
	var got []string
	for i := 0; i < typ.NumMethod(); i++ {
		got = append(got, typ.Method(i).Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("*Context methods = %v, want %v", got, want)
	}
	// No exported field either: the pool set is reachable only through methods.
	st := reflect.TypeFor[Context]()
	for i := 0; i < st.NumField(); i++ {
		if st.Field(i).IsExported() {
			t.Errorf("Context has exported field %s", st.Field(i).Name)
		}
	}
}

// TestBindCopies: the caller's slice and the returned PoolInfo are copies.
func TestBindCopies(t *testing.T) {
	h := newHostile(t, nil)
	ids := []string{"docs", "docs"}
	c, err := h.reg.Bind("c1", ids)
	if err != nil {
		t.Fatal(err)
	}
	ids[0] = "other"
	pools := c.Pools()
	if len(pools) != 1 || pools[0].ID != "docs" {
		t.Fatalf("Pools = %+v, want docs only (duplicates bound once)", pools)
	}
	pools[0].ID = "other"
	pools[0].Trust = Trusted
	if p := c.Pools()[0]; p.ID != "docs" || p.Trust != Untrusted {
		t.Fatalf("PoolInfo is not a copy: %+v", p)
	}
	if _, err := c.Read("other", "o.txt", 0, 0); codeOf(err) != violation.PoolNotSelected {
		t.Fatalf("mutating the Bind slice bound a pool: %v", err)
	}
	u := c.Usage()
	u.PoolsBound[0] = "other"
	if c.Usage().PoolsBound[0] != "docs" {
		t.Fatal("UsageSummary shares memory with the Context")
	}
}

func TestBindErrors(t *testing.T) {
	h := newHostile(t, nil)
	if _, err := h.reg.Bind("", []string{"docs"}); err == nil {
		t.Error("empty context id accepted")
	}
	if _, err := h.reg.Bind(string(make([]byte, 300)), nil); err == nil {
		t.Error("oversized context id accepted")
	}
	c, err := h.reg.Bind("none", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pools()) != 0 {
		t.Error("empty bind has pools")
	}
	if _, err := c.Read("docs", "a.txt", 0, 0); codeOf(err) != violation.PoolNotSelected {
		t.Errorf("read through empty context: %v", err)
	}
	h.reg.Close()
	if _, err := h.reg.Bind("late", []string{"docs"}); err == nil {
		t.Error("Bind after Close accepted")
	}
}

func TestPoolsInfo(t *testing.T) {
	h := newHostile(t, nil)
	c := h.bind(t, "other", "docs")
	p := c.Pools()
	if len(p) != 2 || p[0].ID != "docs" || p[1].ID != "other" {
		t.Fatalf("Pools not sorted: %+v", p)
	}
	if p[1].Files != 1 || p[1].Bytes != int64(len("other pool")) || p[1].Trust != Trusted || p[1].Integrity != IntegrityUnverified {
		t.Fatalf("other: %+v", p[1])
	}
	if p[0].Trust != Untrusted || p[0].Description != "hostile pool" {
		t.Fatalf("docs: %+v", p[0])
	}
	if got := h.reg.Info(); len(got) != 2 || got[0].ID != "docs" {
		t.Fatalf("Registry.Info = %+v", got)
	}
}

func TestList(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 25; i++ {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprint(i)
	}
	reg, _ := onePool(t, files, &Options{MaxListLimit: 10})
	c := bindAll(t, reg)
	var all []string
	off := 0
	for off != -1 {
		page, err := c.List("p", off, 0)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 25 || len(page.Files) > 10 {
			t.Fatalf("page %+v", page)
		}
		for _, f := range page.Files {
			all = append(all, f.Path)
			if f.SHA256 != hexSum(files[f.Path]) || f.Size != int64(len(files[f.Path])) {
				t.Fatalf("file info %+v", f)
			}
		}
		off = page.NextOffset
	}
	if len(all) != 25 || !slices.IsSorted(all) {
		t.Fatalf("listed %v", all)
	}
	page, err := c.List("p", 20, 3)
	if err != nil || len(page.Files) != 3 || page.NextOffset != 23 {
		t.Fatalf("List(20,3) = %+v, %v", page, err)
	}
	page, err = c.List("p", 25, 0)
	if err != nil || len(page.Files) != 0 || page.NextOffset != -1 {
		t.Fatalf("List at end = %+v, %v", page, err)
	}
	for _, bad := range [][2]int{{-1, 0}, {26, 0}, {0, -1}} {
		if _, err := c.List("p", bad[0], bad[1]); codeOf(err) != violation.InvalidArguments {
			t.Errorf("List(%d,%d): %v, want INVALID_ARGUMENTS", bad[0], bad[1], err)
		}
	}
}

func TestAccessLogAndUsage(t *testing.T) {
	tick := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHostile(t, &Options{Now: func() time.Time { return tick }})
	c := h.bind(t, "docs", "other")
	steps := []struct {
		op, pool, path string
		want           violation.Code
	}{
		{OpList, "docs", "", ""},
		{OpRead, "docs", "a.txt", ""},
		{OpRead, "docs", "a.txt", ""}, // same file twice: one file accessed
		{OpRead, "docs", "okln", ""},
		{OpRead, "docs", "../secret.txt", violation.PathOutsidePools},
		{OpRead, "ghost", "a.txt", violation.UnknownPoolID},
		{OpRead, "docs", "unlisted.txt", violation.IntegrityFailure},
	}
	for _, s := range steps {
		var err error
		if s.op == OpList {
			_, err = c.List(s.pool, 0, 0)
		} else {
			_, err = c.Read(s.pool, s.path, 0, 0)
		}
		if codeOf(err) != s.want {
			t.Fatalf("%+v: %v", s, err)
		}
	}
	log := c.AccessLog()
	if len(log) != len(steps) {
		t.Fatalf("log has %d records, want %d", len(log), len(steps))
	}
	for i, s := range steps {
		r := log[i]
		if r.Op != s.op || r.PoolID != s.pool || r.Path != s.path || r.OK != (s.want == "") || r.Violation != s.want || !r.Time.Equal(tick) {
			t.Errorf("record %d = %+v, want %+v", i, r, s)
		}
	}
	u := c.Usage()
	want := UsageSummary{ContextID: "ctx-test", PoolsBound: []string{"docs", "other"}, PoolsUsed: []string{"docs"},
		FilesAccessed: 2, IntegrityVerified: true, Violations: 3, Accesses: 7}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("Usage = %+v\nwant    %+v", u, want)
	}
	// A refused read of a listed symlink that escapes fails the pool.
	if _, err := c.Read("docs", "rel", 0, 0); codeOf(err) != violation.PathOutsidePools {
		t.Fatal(err)
	}
	if c.Usage().IntegrityVerified {
		t.Fatal("IntegrityVerified after an escaping manifest entry")
	}
	// Nothing read: integrity is not claimed.
	if c2 := h.bind(t); c2.Usage().IntegrityVerified || len(c2.Usage().PoolsUsed) != 0 {
		t.Fatalf("fresh usage %+v", c2.Usage())
	}
}

func TestAccessLogBounded(t *testing.T) {
	h := newHostile(t, &Options{MaxAccessLog: 5})
	c := h.bind(t)
	for i := 0; i < 12; i++ {
		c.Read("docs", fmt.Sprintf("../x%d", i), 0, 0)
	}
	c.Read("docs", "a.txt", 0, 0)
	log := c.AccessLog()
	if len(log) != 5 {
		t.Fatalf("log len %d, want 5", len(log))
	}
	if log[0].Path != "../x8" || log[4].Path != "a.txt" {
		t.Fatalf("log does not keep the newest records in order: %+v", log)
	}
	u := c.Usage()
	if u.Accesses != 13 || u.Violations != 12 || u.AccessLogDropped != 8 || u.FilesAccessed != 1 {
		t.Fatalf("counts not exact: %+v", u)
	}
	// Recorded strings are bounded.
	c.Read("docs", string(make([]byte, 100000)), 0, 0)
	if l := c.AccessLog(); len(l[len(l)-1].Path) > maxRecordedStringLen {
		t.Fatal("recorded path not bounded")
	}
}

// TestConcurrentUse runs every method at once; -race does the checking.
func TestConcurrentUse(t *testing.T) {
	h := newHostile(t, &Options{MaxAccessLog: 50})
	c := h.bind(t, "docs", "other")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				p := hostilePaths[(g*7+i)%len(hostilePaths)]
				if _, err := c.Read("docs", p.path, 0, 0); codeOf(err) != p.want {
					t.Errorf("%s: %v", p.name, err)
				}
				c.List("other", 0, 0)
				c.Pools()
				c.Usage()
				c.AccessLog()
			}
		}()
	}
	wg.Wait()
	if u := c.Usage(); u.Accesses != 8*50*2 {
		t.Fatalf("accesses %d, want %d", u.Accesses, 8*50*2)
	}
}
