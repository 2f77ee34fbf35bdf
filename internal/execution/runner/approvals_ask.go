package runner

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/challenge"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// questionTTL bounds how long a person has to answer one question; a later
// answer is refused and the agent asks again.
const questionTTL = 10 * time.Minute

// approvals implements toolkit.Approvals for one call.
type approvals struct{ c *call }

var _ toolkit.Approvals = (*approvals)(nil)

func (a *approvals) claims(d *declarations.Declaration) challenge.Claims {
	return challenge.Claims{DeclarationID: d.ID, ContextID: a.c.s.contextID, Principal: a.c.s.principal,
		NeedDigest: d.Fingerprint, PolicyVersion: a.c.policy.Version()}
}

// Ask implements toolkit.Approvals.
func (a *approvals) Ask(_ context.Context, d *declarations.Declaration) (string, error) {
	cl := a.claims(d)
	cl.Expires = a.c.s.r.now().Add(questionTTL)
	if !d.ExpiresAt.IsZero() && d.ExpiresAt.Before(cl.Expires) {
		cl.Expires = d.ExpiresAt
	}
	return a.c.s.r.challenges.Mint(cl)
}

// DeclarationOf implements toolkit.Approvals.
func (a *approvals) DeclarationOf(state string) (string, error) {
	cl, err := a.c.s.r.challenges.Peek(state)
	if err != nil {
		return "", invalidAnswer(err)
	}
	return cl.DeclarationID, nil
}

// Redeem implements toolkit.Approvals.
func (a *approvals) Redeem(ctx context.Context, state string, d *declarations.Declaration) error {
	cl, err := a.c.s.r.challenges.Verify(state, a.claims(d), a.c.s.r.now())
	if err != nil {
		return invalidAnswer(err)
	}
	if err := a.c.s.r.db.UseChallenge(ctx, cl.Nonce, cl.Expires); err != nil {
		if errors.Is(err, contexts.ErrReplayed) {
			return violation.Wrap(violation.ApprovalInvalid, err, "this approval question was already answered; an answer counts once")
		}
		return violation.Wrap(violation.Unavailable, err, "the answer cannot be recorded; call refused")
	}
	return nil
}

func invalidAnswer(err error) error {
	switch {
	case errors.Is(err, challenge.ErrExpired):
		return violation.Wrap(violation.ApprovalInvalid, err, "the approval question expired before it was answered; call declare_need again to be asked again")
	case errors.Is(err, challenge.ErrMismatch):
		return violation.Wrap(violation.ApprovalInvalid, err, "the answer is to a question about another declaration, context or policy")
	default:
		return violation.Wrap(violation.ApprovalInvalid, err, "the answer does not answer a question this server asked")
	}
}
