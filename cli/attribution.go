package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/attribution"
)

// runAttribution checks a saved tool result (or a bare envelope): the
// attribution must be present, signed with this state directory's key, for
// the content it carries, and — with --session — for that session.
func runAttribution(ctx context.Context, args []string, io Streams) error {
	if len(args) < 2 || args[0] != "verify" {
		return fmt.Errorf("airlock attribution verify FILE [--session ID] [--state DIR]: %w", ErrUsage)
	}
	file := args[1]
	fs := newFlags("attribution verify", io)
	state := fs.String("state", "", "state directory (holds the signing key)")
	session := fs.String("session", "", "the session the result must belong to (default: the one it names)")
	if err := parse(fs, args[2:]); err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sess := *session
	if sess == "" {
		env, err := attribution.ParseEnvelope(data)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", file, err, ErrFailed)
		}
		sess = env.Attribution.SessionID
	}
	op, _, err := openOperator(*state, true)
	if err != nil {
		return err
	}
	defer op.Close()
	signer, err := op.AttributionSigner(ctx)
	if err != nil {
		return err
	}
	env, err := signer.VerifyEnvelope(data, sess)
	if err != nil {
		what := "invalid"
		switch {
		case errors.Is(err, attribution.ErrMissing):
			what = "missing"
		case errors.Is(err, attribution.ErrBadSignature):
			what = "altered or forged"
		case errors.Is(err, attribution.ErrContentMismatch):
			what = "content changed"
		case errors.Is(err, attribution.ErrWrongSession):
			what = "from another session"
		}
		fmt.Fprintf(io.Out, "%s: attribution %s\n", file, what)
		return fmt.Errorf("%s: %w: %w", file, err, ErrFailed)
	}
	a := env.Attribution
	fmt.Fprintf(io.Out, "%s: attribution OK\n  source %s\n  retrieved %s\n  session %s, declaration %s\n  content sha256 %s, trust %s\n",
		file, a.Source, a.RetrievedAt.Format("2006-01-02T15:04:05Z07:00"), a.SessionID, a.DeclarationID, a.ContentSHA256, a.TrustLevel)
	return nil
}
