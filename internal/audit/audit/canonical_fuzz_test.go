package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// canonicalFields are the record's string fields in the order of the
// canonical encoding (canonical.go), with Extra and Instance last; the
// decoder below and the fuzz target's builder share this order.
func canonicalFields(r *audit.Record) []*string {
	return []*string{&r.SessionID, &r.ContextID, &r.Principal, &r.Role, &r.Transport, &r.Tool,
		&r.Capability, &r.Tier, &r.Phase, &r.Decision, &r.RuleID, &r.Reason}
}

// decodeCanonical is an independent reader of the encoding canonical.go
// documents: it fails unless enc is exactly one record's encoding.
func decodeCanonical(enc []byte) (*audit.Record, error) {
	errShort := errors.New("short encoding")
	u64 := func() (uint64, error) {
		if len(enc) < 8 {
			return 0, errShort
		}
		v := binary.BigEndian.Uint64(enc)
		enc = enc[8:]
		return v, nil
	}
	str := func() (string, error) {
		n, err := u64()
		if err != nil {
			return "", err
		}
		if n > uint64(len(enc)) {
			return "", errShort
		}
		s := string(enc[:n])
		enc = enc[n:]
		return s, nil
	}
	var r audit.Record
	tag, err := str()
	if err != nil {
		return nil, err
	}
	if tag != "airlock.audit.v1" && tag != "airlock.audit.v2" {
		return nil, errors.New("unknown tag " + tag)
	}
	seq, err := u64()
	if err != nil {
		return nil, err
	}
	micros, err := u64()
	if err != nil {
		return nil, err
	}
	r.Seq, r.Time = int64(seq), time.UnixMicro(int64(micros)).UTC()
	for _, p := range canonicalFields(&r) {
		if *p, err = str(); err != nil {
			return nil, err
		}
	}
	var args, outcome string
	for _, p := range []*string{&args, &outcome, &r.Violation, &r.ErrorRef, &r.Error} {
		if *p, err = str(); err != nil {
			return nil, err
		}
	}
	if args != "" {
		r.Args = []byte(args)
	}
	r.Outcome = audit.Outcome(outcome)
	dur, err := u64()
	if err != nil {
		return nil, err
	}
	out, err := u64()
	if err != nil {
		return nil, err
	}
	r.DurationMicros, r.OutputBytes = int64(dur), int64(out)
	if len(enc) < 1 || enc[0] > 1 {
		return nil, errors.New("bad truncated byte")
	}
	r.Truncated, enc = enc[0] == 1, enc[1:]
	extra, err := str()
	if err != nil {
		return nil, err
	}
	if extra != "" {
		r.Extra = []byte(extra)
	}
	if tag == "airlock.audit.v2" {
		if r.Instance, err = str(); err != nil {
			return nil, err
		}
		if r.Instance == "" {
			return nil, errors.New("v2 encoding with no instance")
		}
	}
	if len(enc) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return &r, nil
}

// recordFrom builds a record whose every field comes from the fuzzer:
// data is cut into length-prefixed pieces (one byte of length each), so a
// field may hold any byte, NULs and length-like prefixes included.
func recordFrom(seq, micros, dur, out int64, truncated bool, data []byte) *audit.Record {
	next := func() string {
		if len(data) == 0 {
			return ""
		}
		n := min(int(data[0]), len(data)-1)
		s := string(data[1 : 1+n])
		data = data[1+n:]
		return s
	}
	r := &audit.Record{Seq: seq, Time: time.UnixMicro(micros).UTC(), DurationMicros: dur, OutputBytes: out, Truncated: truncated}
	for _, p := range canonicalFields(r) {
		*p = next()
	}
	if a := next(); a != "" {
		r.Args = []byte(a)
	}
	r.Outcome = audit.Outcome(next())
	r.Violation, r.ErrorRef, r.Error = next(), next(), next()
	if e := next(); e != "" {
		r.Extra = []byte(e)
	}
	r.Instance, r.PrevHash, r.Hash = next(), next(), next()
	return r
}

// FuzzCanonicalDecodes checks that a record's canonical encoding is
// injective by decoding it back: an independent reader of the documented
// layout gets every field back exactly (any bytes: NULs, invalid UTF-8,
// bytes that look like a length prefix) and nothing is left over;
// CanonicalSeq reads the seq out of it; AppendCanonical appends the same
// bytes after a prefix; ComputeHash is the SHA-256 of PrevHash and the
// encoding, ignores Hash, and is the same twice. It would catch two
// different stored rows sharing a hash (a field moved across a boundary:
// "ab"+"c" vs "a"+"bc"), a v2 instance dropped without changing the tag,
// or a forged row verifying in a chain.
func FuzzCanonicalDecodes(f *testing.F) {
	seeds := []struct {
		seq, micros, dur, out int64
		truncated             bool
		data                  string
	}{
		{1, time.Date(2026, 7, 1, 12, 30, 45, 123456000, time.UTC).UnixMicro(), 1500, 228, true,
			"\x06sess-1\x05ctx-1\x05alice\x07analyst\x0fstreamable-http\x0eread_pool_file\x09pool.read\x04read\x09execution\x05allow\x0ballow-reads\x11reads are allowed" +
				"\x1e{\"path\":\"a.md\",\"pool\":\"docs\"}\x02ok\x00\x00\x00\x15{\"client_id\":\"c-7\"}\x09airlock-a"},
		{0, 0, 0, 0, false, ""},
		{-1, -62135596800000000, -1, -1, false, "\x01a\x01b"},
		// A field holding what looks like the next field's length prefix.
		{42, 1, 2, 3, true, "\x09\x00\x00\x00\x00\x00\x00\x00\x01x\x00\x01y"},
		// Invalid UTF-8 and a NUL inside the arguments.
		{7, 7, 7, 7, false, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\xff\x00\xfe\"\x06denied"},
	}
	for _, s := range seeds {
		f.Add(s.seq, s.micros, s.dur, s.out, s.truncated, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, seq, micros, dur, out int64, truncated bool, data []byte) {
		r := recordFrom(seq, micros, dur, out, truncated, data)
		enc := r.Canonical()
		back, err := decodeCanonical(enc)
		if err != nil {
			t.Fatalf("canonical encoding does not decode: %v\n%x", err, enc)
		}
		want := *r
		want.PrevHash, want.Hash = "", "" // never part of the encoding
		if !recordsEqual(back, &want) {
			t.Fatalf("decoded record differs:\n got %#v\nwant %#v", back, &want)
		}
		if got, ok := audit.CanonicalSeq(enc); !ok || got != seq {
			t.Fatalf("CanonicalSeq = %d, %v; want %d, true", got, ok, seq)
		}
		prefix := []byte(r.PrevHash)
		if got := r.AppendCanonical(bytes.Clone(prefix)); !bytes.Equal(got, append(prefix, enc...)) {
			t.Fatal("AppendCanonical(prefix) is not prefix + Canonical()")
		}
		sum := sha256.Sum256(append([]byte(r.PrevHash), enc...))
		h := r.ComputeHash()
		if h != hex.EncodeToString(sum[:]) {
			t.Fatalf("ComputeHash = %s, not the SHA-256 of prev_hash and the encoding", h)
		}
		r.Hash = "changed" + r.Hash
		if r.ComputeHash() != h {
			t.Fatal("ComputeHash reads the record's own Hash")
		}
		// Arbitrary bytes: CanonicalSeq never panics and agrees with the
		// decoder about where an encoding's seq is.
		if s, ok := audit.CanonicalSeq(data); ok {
			if len(data) < 32 || int64(binary.BigEndian.Uint64(data[24:32])) != s {
				t.Fatalf("CanonicalSeq(%x) = %d from outside the seq's bytes", data, s)
			}
		}
	})
}

func recordsEqual(a, b *audit.Record) bool {
	return a.Seq == b.Seq && a.Time.UnixMicro() == b.Time.UnixMicro() &&
		a.SessionID == b.SessionID && a.ContextID == b.ContextID && a.Principal == b.Principal &&
		a.Role == b.Role && a.Transport == b.Transport && a.Tool == b.Tool && a.Capability == b.Capability &&
		a.Tier == b.Tier && a.Phase == b.Phase && a.Decision == b.Decision && a.RuleID == b.RuleID &&
		a.Reason == b.Reason && bytes.Equal(a.Args, b.Args) && a.Outcome == b.Outcome &&
		a.Violation == b.Violation && a.ErrorRef == b.ErrorRef && a.Error == b.Error &&
		a.DurationMicros == b.DurationMicros && a.OutputBytes == b.OutputBytes && a.Truncated == b.Truncated &&
		bytes.Equal(a.Extra, b.Extra) && a.Instance == b.Instance
}
