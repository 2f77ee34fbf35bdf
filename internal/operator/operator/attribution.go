package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/store"
)

// ErrOtherStore: a saved result whose attribution this store's key did not
// sign and whose session no server on this store ever opened. A stdio
// client (Claude Desktop, the inspector) drops $AIRLOCK_STATE and
// $XDG_STATE_HOME, so its server often writes to another state directory
// than the operator's shell reads: the result is then genuine but checked
// against the wrong key, and "altered or forged" would send the operator
// hunting for an attack (issue 24 item 4). It still fails verification:
// a forger can name an unknown session too, so the message says both.
var ErrOtherStore = errors.New("not signed by this store: signed by another state directory's server, or forged")

// Store names the store this handle reads and writes: the SQLite file, or
// the PostgreSQL DSN without its password. Operator commands print it, so
// that a check against the wrong store shows as such.
func (o *API) Store() string { return o.db.Path() }

// VerifyAttribution checks a saved tool result (or a bare envelope)
// against this store's attribution key and session (see
// attribution.Signer.VerifyEnvelope). A bad signature on a result whose
// session this store never opened is ErrOtherStore, still wrapping
// attribution.ErrBadSignature.
func (o *API) VerifyAttribution(ctx context.Context, data []byte, session string) (*attribution.Envelope, error) {
	signer, err := o.AttributionSigner(ctx)
	if errors.Is(err, store.ErrNotFound) {
		// No server on this store ever signed anything: whatever the
		// file holds, this store did not sign it.
		return nil, fmt.Errorf("%s holds no attribution key: %w: %w", o.Store(), ErrOtherStore, attribution.ErrBadSignature)
	}
	if err != nil {
		return nil, err
	}
	env, err := signer.VerifyEnvelope(data, session)
	if !errors.Is(err, attribution.ErrBadSignature) {
		return env, err
	}
	claimed, perr := attribution.ParseEnvelope(data)
	if perr != nil {
		return nil, err
	}
	sid := claimed.Attribution.SessionID
	if _, gerr := o.db.GetSession(ctx, sid); errors.Is(gerr, contexts.ErrNotFound) {
		return nil, fmt.Errorf("its session %q was never opened on %s: %w: %w", sid, o.Store(), ErrOtherStore, err)
	}
	return nil, err
}
