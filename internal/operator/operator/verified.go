package operator

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/atomicfile"
)

// VerifiedFile is the marker of the last successful verification: the seq
// and hash of the head it vouched for, signed with the witness key (kept
// out of the database, like the witness). `audit verify --incremental`
// checks only the records after it.
const VerifiedFile = "verified.mark"

const verifiedTag = "airlock-verified v1"

// ErrNoMark is returned when there is no usable verification marker.
var ErrNoMark = errors.New("no valid verification marker")

func (o *API) verifiedMarkPath() string { return filepath.Join(o.dir, VerifiedFile) }

func verifiedMAC(key []byte, seq int64, hash string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s %d %s", verifiedTag, seq, hash)
	return hex.EncodeToString(m.Sum(nil))
}

// readVerifiedMark returns the seq and hash a valid marker names.
func (o *API) readVerifiedMark() (int64, string, error) {
	key, err := witness.LoadKey(state.WitnessKeyPath(o.dir))
	if err != nil {
		return 0, "", fmt.Errorf("%w: %w", ErrNoMark, err)
	}
	b, err := os.ReadFile(o.verifiedMarkPath())
	if err != nil {
		return 0, "", fmt.Errorf("%w: %w", ErrNoMark, err)
	}
	f := strings.Fields(strings.TrimSpace(string(b)))
	if len(f) != 5 || f[0]+" "+f[1] != verifiedTag {
		return 0, "", fmt.Errorf("%w: malformed", ErrNoMark)
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || seq < 1 || strconv.FormatInt(seq, 10) != f[2] {
		return 0, "", fmt.Errorf("%w: bad seq", ErrNoMark)
	}
	if !hmac.Equal([]byte(f[4]), []byte(verifiedMAC(key, seq, f[3]))) {
		return 0, "", fmt.Errorf("%w: its signature does not verify", ErrNoMark)
	}
	return seq, f[3], nil
}

// writeVerifiedMark records the head just verified (best effort: without
// the witness key, or a writable state directory, there is no marker and
// the next incremental check is a full one).
func (o *API) writeVerifiedMark(ctx context.Context) {
	key, err := witness.LoadKey(state.WitnessKeyPath(o.dir))
	if err != nil {
		return
	}
	seq, hash, err := o.db.Head(ctx)
	if err != nil || seq < 1 {
		return
	}
	line := fmt.Sprintf("%s %d %s %s\n", verifiedTag, seq, hash, verifiedMAC(key, seq, hash))
	_ = atomicfile.Write(o.verifiedMarkPath(), []byte(line), 0o600)
}

// VerifyIncremental checks only the records after the last successful
// verification's marker (O(new records)), then the witness; without a
// valid marker, or when the marked record is no longer the one vouched
// for, it checks the whole chain. Tampering with records before the marker
// is found by a full `audit verify`, not by this.
func (o *API) VerifyIncremental(ctx context.Context) (AuditVerification, error) {
	witnessFile := filepath.Join(o.dir, state.WitnessFile)
	seq, hash, err := o.readVerifiedMark()
	if err != nil {
		return o.VerifyAgainst(ctx, witnessFile)
	}
	res, err := o.db.VerifyFrom(ctx, seq, hash)
	if err != nil {
		return AuditVerification{}, err
	}
	return o.finishVerify(ctx, res, seq, witnessFile)
}
