package challenge_test

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/challenge"
)

func ExampleKeyed_Mint() {
	k, err := challenge.New(bytes.Repeat([]byte{7}, 32)) // a real key comes from crypto/rand
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	asked := challenge.Claims{
		DeclarationID: "decl_42",
		ContextID:     "ctx_a",
		Principal:     "alice",
		NeedDigest:    "sha256:1f2e",
		PolicyVersion: "3c9a",
		Expires:       now.Add(10 * time.Minute),
	}
	token, err := k.Mint(asked)
	if err != nil {
		panic(err)
	}
	fmt.Println("looks like a challenge:", challenge.Is(token))

	// The answer arrives with the token; check it against what is being
	// approved now.
	got, err := k.Verify(token, asked, now.Add(time.Minute))
	fmt.Println("verifies:", err == nil, "for", got.DeclarationID, "nonce recorded:", got.Nonce != "")

	other := asked
	other.ContextID = "ctx_b"
	_, err = k.Verify(token, other, now.Add(time.Minute))
	fmt.Println("other context:", errors.Is(err, challenge.ErrMismatch))

	_, err = k.Verify(token, asked, now.Add(time.Hour))
	fmt.Println("too late:", errors.Is(err, challenge.ErrExpired))

	// "x" is never the last character of a MAC Mint writes.
	_, err = k.Verify(token[:len(token)-1]+"x", asked, now)
	fmt.Println("edited:", errors.Is(err, challenge.ErrSignature) || errors.Is(err, challenge.ErrMalformed))
	// Output:
	// looks like a challenge: true
	// verifies: true for decl_42 nonce recorded: true
	// other context: true
	// too late: true
	// edited: true
}
