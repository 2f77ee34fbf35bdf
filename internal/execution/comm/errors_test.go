package comm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

func TestCode(t *testing.T) {
	tests := []struct {
		err  error
		want violation.Code
	}{
		{newErr("fetch", ErrPrivateAddress, "", nil), violation.NetworkAccessAttempt},
		{newErr("fetch", ErrHostDenied, "", errRuleDenied), violation.NetworkAccessAttempt},
		{newErr("fetch", ErrScheme, "", nil), violation.NetworkAccessAttempt},
		{newErr("query", ErrNotReadOnly, "", nil), violation.WriteAttempt},
		{newErr("fetch", ErrInvalidURL, "", nil), violation.InvalidArguments},
		{newErr("query", ErrInvalidQuery, "", nil), violation.InvalidArguments},
		{newErr("query", ErrMultipleStatements, "", nil), violation.InvalidArguments},
		{newErr("fetch", ErrRobots, "", nil), violation.PolicyDenied},
		{newErr("fetch", ErrTooManyRedirects, "", nil), violation.LimitExceeded},
		{newErr("fetch", ErrTooLarge, "", nil), violation.LimitExceeded},
		{newErr("fetch", ErrTimeout, "", context.DeadlineExceeded), violation.LimitExceeded},
		{newErr("fetch", ErrBinary, "", nil), violation.Unavailable},
		{newErr("fetch", ErrCharset, "", nil), violation.Unavailable},
		{&Error{Op: "fetch", Kind: ErrStatus, Status: 404}, violation.Unavailable},
		{newErr("search", ErrUnavailable, "", nil), violation.Unavailable},
		// A private-address refusal met while fetching robots.txt is still
		// a network access attempt, whatever wraps it.
		{fmt.Errorf("wrapped: %w", newErr("fetch", ErrRobots, "", newErr("fetch", ErrPrivateAddress, "", nil))), violation.NetworkAccessAttempt},
		{context.DeadlineExceeded, violation.LimitExceeded},
		{context.Canceled, violation.Unavailable},
		{errors.New("other"), violation.Internal},
		{nil, violation.Internal},
	}
	for _, tt := range tests {
		if got := Code(tt.err); got != tt.want {
			t.Errorf("Code(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

// TestViolationKeepsCausePrivate: the agent sees code and public message;
// the cause (which may hold internal addresses) only in the log form.
func TestViolationKeepsCausePrivate(t *testing.T) {
	err := newErr("fetch", ErrPrivateAddress, `"internal.test" resolves to or is an address that may not be reached`,
		errors.New("refusing to connect to 10.1.2.3"))
	v := Violation(err)
	if v.Code != violation.NetworkAccessAttempt || strings.Contains(v.Public(), "10.1.2.3") || !strings.Contains(v.Error(), "10.1.2.3") {
		t.Errorf("public %q, log %q", v.Public(), v.Error())
	}
	if !errors.Is(v, err) || !errors.Is(v, ErrPrivateAddress) {
		t.Error("the violation does not wrap the error")
	}
	if g := Violation(errors.New("secret /etc/path")); g.Code != violation.Internal || strings.Contains(g.Public(), "/etc") {
		t.Errorf("generic: %q", g.Public())
	}
	if Violation(nil) != nil {
		t.Error("Violation(nil) != nil")
	}
}
