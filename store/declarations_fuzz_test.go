package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/store"
)

// FuzzDeclarationRoundTrip: whatever text and times a declaration holds, it
// is either refused with ErrInvalid (text that is not UTF-8 or holds NUL,
// a time outside years 1 to 9999) or read back exactly, times in UTC to
// the microsecond, by Get and after a Transition.
func FuzzDeclarationRoundTrip(f *testing.F) {
	f.Add("queries need a person", "SELECT 1 -- \"x\" <b>", "operator:bob", int64(1_780_000_000), int64(123456789), 2)
	f.Add("", "", "", int64(0), int64(0), 0)
	f.Add("\x00", "\xff", "\u2028\\u0000", int64(-62135596800), int64(0), -1)
	f.Add("a", "b", "c", int64(253402300800), int64(0), 1<<40)
	f.Add("😀\t\n", `{"k":[1]}`, "é", int64(-62135596801), int64(999999999), 7)

	ctx := context.Background()
	db, _ := openTemp(f, nil)
	st := db.Declarations()
	n := 0
	f.Fuzz(func(t *testing.T, reason, query, by string, sec, nsec int64, attempts int) {
		n++
		at := time.Unix(sec, nsec).In(time.FixedZone("", int(sec%50400)))
		d := testDecl(fmt.Sprint("f", n), reason, declarations.StateApproved)
		d.Reason, d.Need.Parameters.Query, d.DecidedBy = reason, query, by
		d.ExpiresAt, d.Attempts = at, attempts
		d.History = append(d.History, declarations.Transition{From: declarations.StateApproved, To: declarations.StateApproved, At: at, By: by, Reason: query})
		want := d.Clone()

		err := st.Create(ctx, d)
		storable := true
		for _, s := range []string{reason, query, by} {
			storable = storable && utf8.ValidString(s) && !strings.Contains(s, "\x00")
		}
		if u := at.UTC(); u.Year() < 1 || u.Year() > 9999 {
			storable = false
		}
		if !storable {
			if !errors.Is(err, declarations.ErrInvalid) {
				t.Fatalf("Create of an unstorable declaration: %v, want ErrInvalid", err)
			}
			if _, err := st.Get(ctx, d.ID); !errors.Is(err, declarations.ErrNotFound) {
				t.Fatalf("refused declaration is stored: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		normalize(want)
		got, err := st.Get(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
		moved, err := st.Transition(ctx, d.ID, []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(x *declarations.Declaration) error {
			x.Attempts++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want.State, want.Attempts = declarations.StateExecuting, want.Attempts+1
		if got, err = st.Get(ctx, d.ID); err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(moved, want) {
			t.Fatalf("after Transition:\n got %+v (%v)\nreturned %+v\nwant %+v", got, err, moved, want)
		}
	})
}

// normalize makes d what the store gives back: times in UTC to the
// microsecond, no empty history.
func normalize(d *declarations.Declaration) {
	for _, tp := range []*time.Time{&d.CreatedAt, &d.DecidedAt, &d.ExpiresAt, &d.ExecutedAt} {
		*tp = tp.UTC().Truncate(time.Microsecond)
	}
	for i := range d.History {
		d.History[i].At = d.History[i].At.UTC().Truncate(time.Microsecond)
	}
	if len(d.History) == 0 {
		d.History = nil
	}
}

// ExampleDB_Declarations: the server's Manager keeps declarations in the
// store's file, and the operator approves through another handle on it
// (another process, in real use).
func ExampleDB_Declarations() {
	dir, _ := os.MkdirTemp("", "airlock-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	server, err := store.Open(dir+"/airlock.db", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()
	cli, err := store.Open(dir+"/airlock.db", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()

	m := declarations.NewManager(server.Declarations(), nil)
	need := declarations.Need{
		Operation:  declarations.OpFetch,
		Parameters: declarations.Parameters{URL: "https://example.com/prices"},
		Justification: declarations.Justification{
			UserRequest: "current prices", MissingKnowledge: "the pool has last year's", ExpectedUse: "a table",
		},
	}
	d, err := m.Declare(ctx, "session-1", "alice", need, declarations.DecisionRequireApproval, "comm-needs-approval", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	op := declarations.NewManager(cli.Declarations(), nil)
	if _, err := op.Approve(ctx, d.ID, "operator:bob", "looks fine"); err != nil {
		fmt.Println(err)
		return
	}
	d, err = m.Begin(ctx, d.ID, "session-1") // consumes the approval
	fmt.Println(d.State, err)
	_, err = op.Begin(ctx, d.ID, "session-1")
	fmt.Println(errors.Is(err, declarations.ErrAlreadyConsumed))
	// Output:
	// executing <nil>
	// true
}
