package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/internal/operator/operator"
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
	checked := "  checked: " + checkedStore(op, *state) + "\n"
	env, err := op.VerifyAttribution(ctx, data, sess)
	if err != nil {
		what := "invalid"
		switch {
		case errors.Is(err, operator.ErrOtherStore):
			// A genuine result checked against the wrong state
			// directory's key is not "altered or forged" (issue 24
			// item 4): say which store was checked and how to pick
			// the right one.
			what = "not signed by this store's key, and no server on this store opened its session: " +
				"it came from a server with another state directory (a stdio client such as Claude Desktop " +
				"drops $AIRLOCK_STATE: pass that server's --state), or it was forged"
		case errors.Is(err, attribution.ErrMissing):
			what = "missing"
		case errors.Is(err, attribution.ErrBadSignature):
			what = "altered or forged"
		case errors.Is(err, attribution.ErrContentMismatch):
			what = "content changed"
		case errors.Is(err, attribution.ErrWrongSession):
			what = "from another session"
		}
		fmt.Fprintf(io.Out, "%s: attribution %s\n%s", file, what, checked)
		return fmt.Errorf("%s: %w: %w", file, err, ErrFailed)
	}
	a := env.Attribution
	fmt.Fprintf(io.Out, "%s: attribution OK\n  source %s\n  retrieved %s\n  session %s, declaration %s\n  content sha256 %s, trust %s\n",
		file, a.Source, a.RetrievedAt.Format("2006-01-02T15:04:05Z07:00"), a.SessionID, a.DeclarationID, a.ContentSHA256, a.TrustLevel)
	fmt.Fprint(io.Out, checked)
	return nil
}
