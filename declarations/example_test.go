package declarations_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

func ExampleNeed_Validate() {
	n := declarations.Need{
		Operation:  declarations.OpFetch,
		Parameters: declarations.Parameters{URL: "https://user:hunter2@example.com/report"},
		Justification: declarations.Justification{
			UserRequest:      "Summarise the Q3 report",
			MissingKnowledge: "The report is not in the bound pools",
			ExpectedUse:      "Quote its figures with the source",
		},
	}
	err := n.Validate()
	var fe *declarations.FieldError
	if errors.As(err, &fe) {
		fmt.Println("field:", fe.Field)
	}
	fmt.Println(err)
	fmt.Println(errors.Is(err, declarations.ErrInvalid))
	// Output:
	// field: parameters.url
	// parameters.url: must not carry user information (user:password@): it would be recorded and shown to approvers
	// true
}

func ExampleParseNeed() {
	_, err := declarations.ParseNeed([]byte(`{"operation":"comm.search","operation":"comm.fetch"}`))
	fmt.Println(err)
	n, err := declarations.ParseNeed([]byte(`{
		"operation": "comm.query",
		"parameters": {"query": "SELECT name, price FROM products", "source": "catalog"},
		"justification": {
			"user_request": "Which product is cheapest?",
			"missing_knowledge": "Prices live in the catalog database",
			"expected_use": "Name the cheapest product"
		}
	}`))
	fmt.Println(err, n.Operation, n.Parameters.Source)
	fmt.Println(string(n.Canonical()))
	// Output:
	// need: duplicate key
	// <nil> comm.query catalog
	// {"operation":"comm.query","parameters":{"query":"SELECT name, price FROM products","source":"catalog"},"justification":{"user_request":"Which product is cheapest?","missing_knowledge":"Prices live in the catalog database","expected_use":"Name the cheapest product"}}
}

// A need that policy sends to a person: declared, approved by an operator,
// executed once; the approval cannot be used again.
func ExampleManager() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	m := declarations.NewManager(declarationstest.NewMemoryStore(), &declarations.ManagerOptions{
		Now: func() time.Time { return now },
	})
	need := declarations.Need{
		Operation:  declarations.OpFetch,
		Parameters: declarations.Parameters{URL: "https://example.com/prices"},
		Justification: declarations.Justification{
			UserRequest:      "What does Product X cost?",
			MissingKnowledge: "Prices are not in the bound pools",
			ExpectedUse:      "Quote the price with its source",
		},
	}
	d, err := m.Declare(ctx, "session-1", "alice", need, declarations.DecisionRequireApproval, "approve:comm.fetch", "fetches need a person")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.State)

	d, _ = m.Approve(ctx, d.ID, "operator:bob", "fine")
	fmt.Println(d.State, "until", d.ExpiresAt.Format(time.TimeOnly))

	_, err = m.Begin(ctx, d.ID, "session-2")
	fmt.Println(errors.Is(err, declarations.ErrWrongContext))

	d, _ = m.Begin(ctx, d.ID, "session-1")
	fmt.Println(d.State, d.Need.Parameters.URL)

	d, _ = m.Finish(ctx, d.ID, &declarations.ResultRef{
		ContentSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	}, nil)
	fmt.Println(d.State)

	_, err = m.Begin(ctx, d.ID, "session-1")
	fmt.Println(errors.Is(err, declarations.ErrAlreadyConsumed))

	for _, h := range d.History {
		fmt.Printf("%-9s → %-9s by %s\n", h.From, h.To, h.By)
	}
	// Output:
	// declared
	// approved until 09:15:00
	// true
	// executing https://example.com/prices
	// executed
	// true
	//           → declared  by agent:alice
	// declared  → approved  by operator:bob
	// approved  → executing by runner
	// executing → executed  by runner
}

// A failed execution may be retried once, and only with a fresh approval.
func ExampleManager_Retry() {
	ctx := context.Background()
	m := declarations.NewManager(declarationstest.NewMemoryStore(), nil)
	need := declarations.Need{
		Operation:  declarations.OpSearch,
		Parameters: declarations.Parameters{Query: "product x price"},
		Justification: declarations.Justification{
			UserRequest: "Price of X", MissingKnowledge: "Not in the pools", ExpectedUse: "Cite it",
		},
	}
	d, _ := m.Declare(ctx, "s1", "alice", need, declarations.DecisionAllow, "allow:comm.search", "low risk")
	for {
		if _, err := m.Begin(ctx, d.ID, "s1"); err != nil {
			fmt.Println("begin:", err)
			return
		}
		d, _ = m.Finish(ctx, d.ID, nil, errors.New("search endpoint unavailable"))
		fmt.Println(d.State, "after attempt", d.Attempts)
		if _, err := m.Retry(ctx, d.ID, "s1"); err != nil {
			fmt.Println(errors.Is(err, declarations.ErrNoAttemptsLeft))
			return
		}
		_, err := m.Begin(ctx, d.ID, "s1")
		fmt.Println(errors.Is(err, declarations.ErrState)) // declared again: needs approval
		m.Approve(ctx, d.ID, "policy:allow:comm.search", "re-evaluated")
	}
	// Output:
	// failed after attempt 1
	// true
	// failed after attempt 2
	// true
}
