package witness

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Checkpoint is one signed statement about the audit chain at a moment.
type Checkpoint struct {
	// Seq is the seq of the last record in the chain; 0 for an empty chain.
	Seq int64
	// Head is the hex SHA-256 of record Seq (64 zeros for an empty chain).
	Head string
	// Kill is the kill-switch state when the checkpoint was taken.
	Kill bool
	// Time is when the checkpoint was taken (UTC, nanoseconds).
	Time time.Time
	// Instance names the writing process, e.g. "serve.host.1234.ab12".
	Instance string
}

// Line format, one checkpoint per line:
//
//	airlock-witness-v1 seq=12 head=<64 hex> kill=0 time=<RFC 3339 UTC> instance=<id> mac=<64 hex>
//
// The MAC is HMAC-SHA256 under the witness key over every byte before
// " mac=". Fields are fixed in order and spelling so that there is exactly
// one encoding of a checkpoint (no parser differential between writer and
// verifier).
const (
	magic       = "airlock-witness-v1"
	timeLayout  = "2006-01-02T15:04:05.000000000Z"
	maxInstance = 64
	// MaxLine bounds a line; anything longer is malformed.
	MaxLine = 256
)

// The package's sentinel errors.
var (
	// ErrMalformed: a witness line does not have the v1 shape.
	ErrMalformed = errors.New("malformed witness line")
	// ErrBadMAC: a well-formed line whose MAC does not match (forged, edited
	// or signed with another key).
	ErrBadMAC = errors.New("witness line signature does not match")
	// ErrRolledBack: the chain is behind a checkpoint, or checkpoints go
	// backwards — records cut off the end, the database emptied, or an
	// older copy of it restored.
	ErrRolledBack = errors.New("audit chain rolled back behind its witness")
	// ErrRewritten: the record at a checkpointed seq has another hash than
	// the checkpoint says — the chain was rewritten from some point on.
	ErrRewritten = errors.New("audit chain rewritten after it was witnessed")
	// ErrKillReleased: the last checkpoint says the kill switch is engaged
	// but it is released now, with no checkpoint recording the release.
	ErrKillReleased = errors.New("kill switch released without a witnessed release")
	// ErrUnanchored: the chain has records but no checkpoint.
	ErrUnanchored = errors.New("audit chain has no witness checkpoint")
	// ErrBadKey: a key file that is not 32 hex-encoded bytes.
	ErrBadKey = errors.New("bad witness key")
)

// LineError locates a problem in a witness file.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("witness line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// validInstance allows what a host name, pid and random suffix need and
// nothing that could split or extend a line.
func validInstance(s string) bool {
	if s == "" || len(s) > maxInstance {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

func validHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// body is the signed part of the line.
func (c Checkpoint) body() ([]byte, error) {
	if c.Seq < 0 || !validHex64(c.Head) || !validInstance(c.Instance) || c.Time.IsZero() || c.Time.Year() > 9999 || c.Time.Year() < 1 {
		return nil, fmt.Errorf("witness: invalid checkpoint %+v: %w", c, ErrMalformed)
	}
	kill := "0"
	if c.Kill {
		kill = "1"
	}
	return fmt.Appendf(nil, "%s seq=%d head=%s kill=%s time=%s instance=%s",
		magic, c.Seq, c.Head, kill, c.Time.UTC().Format(timeLayout), c.Instance), nil
}

// Marshal returns the signed line for c, newline included.
func (c Checkpoint) Marshal(key []byte) ([]byte, error) {
	b, err := c.body()
	if err != nil {
		return nil, err
	}
	b = append(b, " mac="...)
	b = hex.AppendEncode(b, sign(key, b[:len(b)-len(" mac=")]))
	return append(b, '\n'), nil
}

func sign(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// ParseLine parses one line (without its newline) and checks its MAC.
// A line that is not exactly what Marshal would produce for the checkpoint
// it names is ErrMalformed, so one checkpoint has one encoding.
func ParseLine(line, key []byte) (Checkpoint, error) {
	var c Checkpoint
	if len(line) > MaxLine {
		return c, fmt.Errorf("%d bytes: %w", len(line), ErrMalformed)
	}
	i := bytes.LastIndex(line, []byte(" mac="))
	if i < 0 {
		return c, fmt.Errorf("no mac: %w", ErrMalformed)
	}
	body, macHex := line[:i], string(line[i+len(" mac="):])
	f := bytes.Split(body, []byte(" "))
	if len(f) != 6 || string(f[0]) != magic || !validHex64(macHex) {
		return c, fmt.Errorf("wrong fields: %w", ErrMalformed)
	}
	var vals [5]string
	for j, name := range []string{"seq=", "head=", "kill=", "time=", "instance="} {
		v, ok := bytes.CutPrefix(f[j+1], []byte(name))
		if !ok {
			return c, fmt.Errorf("field %d is not %s: %w", j+1, name, ErrMalformed)
		}
		vals[j] = string(v)
	}
	seq, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || seq < 0 {
		return c, fmt.Errorf("seq %q: %w", vals[0], ErrMalformed)
	}
	t, err := time.Parse(timeLayout, vals[3])
	if err != nil {
		return c, fmt.Errorf("time %q: %w", vals[3], ErrMalformed)
	}
	if vals[2] != "0" && vals[2] != "1" {
		return c, fmt.Errorf("kill %q: %w", vals[2], ErrMalformed)
	}
	c = Checkpoint{Seq: seq, Head: vals[1], Kill: vals[2] == "1", Time: t, Instance: vals[4]}
	// Canonical form only: "seq=012", "+12" or a non-canonical time would
	// re-marshal differently; refusing them keeps one reading per line.
	canon, err := c.body()
	if err != nil || !bytes.Equal(canon, body) {
		return Checkpoint{}, fmt.Errorf("not canonical: %w", ErrMalformed)
	}
	want := sign(key, body)
	got, _ := hex.DecodeString(macHex)
	if !hmac.Equal(want, got) {
		return Checkpoint{}, ErrBadMAC
	}
	return c, nil
}

// Parse reads a whole witness file. It stops at the first bad line and
// returns the checkpoints before it with a *LineError: a verifier must not
// skip a line it cannot vouch for. A last line without its newline (a torn
// append) is reported the same way.
func Parse(data, key []byte) ([]Checkpoint, error) {
	var out []Checkpoint
	for n := 1; len(data) > 0; n++ {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return out, &LineError{Line: n, Err: fmt.Errorf("torn (no newline): %w", ErrMalformed)}
		}
		c, err := ParseLine(line, key)
		if err != nil {
			return out, &LineError{Line: n, Err: err}
		}
		out = append(out, c)
		data = rest
	}
	return out, nil
}
