package audit_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/golden"
)

// at is the time of every event in the table: microsecond precision, as
// the store keeps it.
var at = time.Date(2026, 7, 1, 12, 30, 45, 123456000, time.UTC)

var (
	alice = audit.Actor{SessionID: "sess-1", ContextID: "ctx-1", Principal: "alice", Role: "analyst", Transport: "streamable-http"}
	// aliceOAuth is alice over an OAuth access token issued to a client.
	aliceOAuth = audit.Actor{SessionID: "sess-1", ContextID: "ctx-1", Principal: "alice", Role: "analyst", Transport: "streamable-http", ClientID: "client-7"}
	carol      = audit.Operator{Name: "carol", Transport: "console"}
	cx         = audit.Context{ID: "ctx-2", Parent: "ctx-1", Principal: "alice", Role: "analyst", Phase: "planning",
		Policy: "default", PolicyVersion: "v3", Pools: []string{"docs", "wiki"}}
	pin = audit.Pin{Upstream: "github", Tool: "create_issue", State: "approved", SeenDigest: "aa11", ApprovedDigest: "aa11", Flags: 1}
	// usage stands for sources.UsageSummary: any JSON-able value.
	usage = map[string]any{"context_id": "ctx-1", "pools_bound": []string{"docs"}, "files_accessed": 2}
	errX  = errors.New("store says no")
)

// finished is a call's record as the runner's steps leave it: every field
// a call can carry is set, so the golden pins the whole encoding.
func finished() *audit.Record {
	r := audit.Call(at, alice, "read_pool_file", []byte(`{"path":"a.md","pool":"docs"}`))
	r.Tier, r.Capability, r.Phase = "read", "pool.read", "execution"
	r.Decision, r.RuleID, r.Reason = "allow", "allow-reads", "reads are allowed"
	r.Outcome, r.DurationMicros, r.OutputBytes, r.Truncated = audit.OutcomeOK, 1500, 228, true
	r.Extra = audit.WithClient([]byte(`{"path":"a.md","pool":"docs"}`), "client-7")
	return r
}

// eventCase is one constructor call; ctor names the constructor, so that
// TestEveryConstructorHasAGolden can check that each has one.
type eventCase struct {
	name, ctor string
	rec        *audit.Record
}

func cases() []eventCase {
	denied := audit.Call(at, alice, "write_file", []byte(`{}`))
	denied.Tier, denied.Capability, denied.Decision, denied.RuleID = "act", "fs.write", "deny", "no-writes"
	denied.Outcome, denied.Violation, denied.Reason = audit.OutcomeOf(violation.PolicyDenied), string(violation.PolicyDenied), "fs.write is denied by policy (rule no-writes)"
	internal := audit.Call(at, alice, "fetch_url", []byte(`{"url":"https://example.com/"}`))
	internal.Outcome, internal.Violation, internal.ErrorRef, internal.Error = audit.OutcomeOf(violation.Internal), string(violation.Internal), "ab12cd34", "dial tcp: refused"
	instance := finished()
	instance.Seq, instance.Instance = 42, "airlock-a"
	return []eventCase{
		{"call", "Call", audit.Call(at, aliceOAuth, "read_pool_file", []byte(`{"pool":"docs"}`))},
		{"call-finished", "Call", finished()},
		{"call-denied", "Call", denied},
		{"call-internal-error", "Call", internal},
		{"call-v2-instance", "Call", instance},
		{"call-started", "CallStarted", audit.CallStarted(finished())},
		{"session-open", "SessionOpen", audit.SessionOpen(at, aliceOAuth, "planning", "default", []string{"docs", "wiki"})},
		{"session-close", "SessionClose", audit.SessionClose(at, audit.Actor{SessionID: "sess-1", ContextID: "ctx-1", Principal: "alice", Transport: "stdio"}, "client closed the session", usage)},
		{"session-expire", "SessionExpire", audit.SessionExpire(at, audit.Actor{SessionID: "sess-1", ContextID: "ctx-1", Principal: "alice", Transport: "sse"}, 30*time.Minute, nil)},
		{"session-evict", "SessionEvict", audit.SessionEvict(at, audit.Actor{SessionID: "sess-1", ContextID: "ctx-1", Principal: "alice", Transport: "streamable-http"}, 16, "sess-17", usage)},
		{"session-refusal", "SessionRefusal", audit.SessionRefusal(at, alice, violation.SessionForeign, "hmac-sha256:00ff", "session belongs to another principal")},
		{"session-refusal-none-presented", "SessionRefusal", audit.SessionRefusal(at, alice, violation.ContextInvalid, "", "context handle is not valid")},
		{"edge-refusal", "EdgeRefusal", audit.EdgeRefusal(at, audit.Edge{Transport: "streamable-http", Remote: "203.0.113.9", Principal: "alice", Role: "analyst",
			ClientID: "client-7", Code: "UNAUTHENTICATED", Reason: "token not recognised"}, 3)},
		{"edge-refusal-anonymous", "EdgeRefusal", audit.EdgeRefusal(at, audit.Edge{Transport: "sse", Remote: "203.0.113.9", Code: "MESSAGE_TOO_LARGE", Reason: "body over 4 MiB"}, 1)},
		{"context-create", "ContextCreate", audit.ContextCreate(at, audit.Context{ID: "ctx-1", Principal: "alice", Role: "analyst", Phase: "planning",
			Policy: "default", PolicyVersion: "v3", Pools: []string{"docs"}}, "default context of alice")},
		{"context-rebind", "ContextRebind", audit.ContextRebind(at, cx, "the role's policy or pools changed")},
		{"credential-revoke", "CredentialRevoke", audit.CredentialRevoke(at, "github-token", "file removed")},
		{"credential-restore", "CredentialRestore", audit.CredentialRestore(at, "github-token", "file present again")},
		{"declaration-expire", "DeclarationExpire", audit.DeclarationExpire(at, audit.Expiry{ID: "decl-1", ContextID: "ctx-1", Owner: "alice", State: "approved",
			ExpiresAt: at.Add(-time.Minute)})},
		{"declaration-expire-undecided", "DeclarationExpire", audit.DeclarationExpire(at, audit.Expiry{ID: "decl-2", ContextID: "ctx-1", Owner: "alice", State: "declared",
			ExpiresAt: at.Add(-time.Hour), Undecided: true})},
		{"upstream-pin", "UpstreamPin", audit.UpstreamPin(at, "alice", audit.Pin{Upstream: "github", Tool: "create_issue", State: "pending", SeenDigest: "aa11"})},
		{"upstream-pin-changed", "UpstreamPin", audit.UpstreamPin(at, "operator:carol", audit.Pin{Upstream: "github", Tool: "create_issue", State: "changed",
			SeenDigest: "bb22", ApprovedDigest: "aa11", Flags: 2, Blocked: true})},
		{"upstream-approve", "UpstreamApprove", audit.UpstreamApprove(at, carol, pin, "aa11", "reviewed the diff", nil)},
		{"upstream-approve-stale", "UpstreamApprove", audit.UpstreamApprove(at, audit.Operator{Name: "carol"},
			audit.Pin{Upstream: "github", Tool: "create_issue", SeenDigest: "cc33"}, "cc33", "", errors.New("the definition changed since it was reviewed"))},
		{"upstream-override", "UpstreamOverride", audit.UpstreamOverride(at, carol, pin, "aa11", audit.Override{Reason: "the note is for its own client",
			Overridden: true, Score: 1.4, Signals: []string{"authority-marker", "sensitive-path"}, EditedSHA256: strings.Repeat("ef", 32)}, nil)},
		{"upstream-override-edit-only", "UpstreamOverride", audit.UpstreamOverride(at, audit.Operator{Name: "carol", Transport: "cli"}, pin, "aa11",
			audit.Override{Reason: "shorter for the agent", Score: 0.4, Signals: []string{"long-description"}, EditedSHA256: strings.Repeat("0f", 32)}, nil)},
		{"upstream-override-stale", "UpstreamOverride", audit.UpstreamOverride(at, carol, audit.Pin{Upstream: "github", Tool: "create_issue", SeenDigest: "cc33"}, "bb22",
			audit.Override{Reason: "reviewed", Overridden: true, Score: 1.2, Signals: []string{"other-tools"}}, errors.New("the definition changed since it was reviewed"))},
		{"upstream-egress", "UpstreamEgress", audit.UpstreamEgress(at, "alice", "github", audit.Egress{Method: "CONNECT", Host: "api.github.com", Port: 443, Allowed: true})},
		{"upstream-egress-refused", "UpstreamEgress", audit.UpstreamEgress(at, "alice", "github", audit.Egress{Method: "GET", Host: "169.254.169.254", Port: 80,
			Code: violation.NetworkAccessAttempt, Err: errors.New("address not allowed")})},
		{"upstream-egress-unreadable", "UpstreamEgress", audit.UpstreamEgress(at, "alice", "github", audit.Egress{Code: violation.MalformedMessage})},
		{"upstream-exited", "UpstreamExited", audit.UpstreamExited(at, audit.Exited{Principal: "alice", Upstream: "memory", Scope: "context:ctx-1",
			Status: "exit 3", Stderr: []string{"panic: out of cheese", "goroutine 1 [running]:"}})},
		{"upstream-exited-shared", "UpstreamExited", audit.UpstreamExited(at, audit.Exited{Upstream: "clock", Scope: "shared:analyst",
			Status: "signal SIGKILL (memory)"})},
		{"approve", "Approve", audit.Approve(at, carol, "decl-1", "ctx-1", "looks right", nil)},
		{"approve-failed", "Approve", audit.Approve(at, audit.Operator{Name: "carol", Transport: "cli"}, "decl-9", "", "", errX)},
		{"deny", "Deny", audit.Deny(at, carol, "decl-1", "ctx-1", "not this week", nil)},
		{"phase", "Phase", audit.Phase(at, carol, "ctx-1", "execution", "plan reviewed", nil)},
		{"phase-refused", "Phase", audit.Phase(at, carol, "ctx-2", "execution", "go", errors.New("its parent ctx-1 is in planning"))},
		{"child-context", "ChildContext", audit.ChildContext(at, carol, &cx, "a narrower context for the report", nil)},
		{"child-context-failed", "ChildContext", audit.ChildContext(at, carol, nil, "widen it", errors.New("the child widens its parent"))},
		{"context-task", "ContextTask", audit.ContextTask(at, carol, "ctx-2", "planning", "the report's task", audit.Task{Input: "task",
			SHA256: strings.Repeat("cd", 32), Bytes: 412}, nil)},
		{"context-task-refused", "ContextTask", audit.ContextTask(at, audit.Operator{Name: "carol", Transport: "cli"}, "ctx-2", "planning", "",
			audit.Task{Input: "task"}, errors.New("empty: invalid task text"))},
		{"endorse", "Endorse", audit.Endorse(at, "operator:carol", "console", "ctx-1", "the landlord's IBAN", audit.Endorsement{DeclarationID: "decl-1",
			Values:  []audit.EndorsedValue{{Arg: "iban", ID: "v_0a1b", ValueHMAC: "hmac-sha256:00ff"}, {Arg: "to", ID: "v_2c3d", ValueHMAC: "hmac-sha256:11ee", Already: true}},
			Skipped: []audit.SkippedValue{{Arg: "body", Why: "cut or too long"}}}, nil)},
		{"endorse-upfront", "Endorse", audit.Endorse(at, "elicitation:alice", "stdio", "ctx-1", "", audit.Endorsement{
			Values: []audit.EndorsedValue{{Arg: "value", ID: "v_0a1b", ValueHMAC: "hmac-sha256:00ff"}}}, nil)},
		{"endorse-nothing", "Endorse", audit.Endorse(at, "operator:carol", "cli", "ctx-1", "ok", audit.Endorsement{DeclarationID: "decl-2"},
			errors.New("nothing to endorse"))},
		{"kill-switch", "KillSwitch", audit.KillSwitch(audit.Kill{ID: "k-1", Engaged: true, By: "carol", Reason: "incident 7", At: at})},
		{"kill-switch-release", "KillSwitch", audit.KillSwitch(audit.Kill{ID: "k-2", By: "carol", Reason: "resolved", At: at.Add(time.Hour)})},
		{"reload", "Reload", audit.Reload(at, "carol", "/etc/airlock/airlock.yaml")},
		{"reload-refusal", "ReloadRefusal", audit.ReloadRefusal(at, "carol", errors.New("the pools section changed; restart to apply it"))},
		{"rotation", "Rotation", audit.Rotation("carol", "00000000000000000001-00000000000000000100.auditseg", 1, 100, strings.Repeat("ab", 32))},
		{"console-login", "ConsoleLogin", audit.ConsoleLogin(at, carol, "console login", nil)},
		{"console-login-failed", "ConsoleLogin", audit.ConsoleLogin(at, carol, "console login", errX)},
		{"console-logout", "ConsoleLogout", audit.ConsoleLogout(at, carol, "console logout", nil)},
		{"run-interrupted", "RunInterrupted", audit.RunInterrupted(at, audit.Run{ID: "run_0b1c", Pipeline: "sales_summary", ContextID: "ctx-1",
			SessionID: "sess-1", Principal: "alice", Role: "analyst", Transport: "stdio", StartedAt: at.Add(-time.Minute)})},
	}
}

// goldenRecord is how a record's canonical bytes are kept: a hex dump (the
// strings show in its right column), then the hash the record would carry
// first in a chain.
func goldenRecord(r *audit.Record) string {
	c := *r
	c.PrevHash = strings.Repeat("0", 64)
	return fmt.Sprintf("%s %s %s\n%shash %s\n", c.Capability, c.Decision, c.Outcome, hex.Dump(c.Canonical()), c.ComputeHash())
}

// TestGolden pins the canonical bytes of every event kind: a change to a
// constructor or to the encoding that would alter the record an existing
// event writes fails here (old chains verify only while these hold; the
// store's tests verify old databases in store/testdata too).
func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			if seen[c.name] {
				t.Fatalf("two cases named %s", c.name)
			}
			seen[c.name] = true
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), []byte(goldenRecord(c.rec)), "go test ./internal/audit/audit -run Golden -update")
		})
	}
}

// TestGoldenFilesHaveCases: a golden file whose case was removed is a
// kind that silently left the vocabulary.
func TestGoldenFilesHaveCases(t *testing.T) {
	names := map[string]bool{}
	for _, c := range cases() {
		names[c.name] = true
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	for _, f := range files {
		if n := strings.TrimSuffix(filepath.Base(f), ".golden"); !names[n] {
			t.Errorf("%s has no case in the table", f)
		}
	}
}

// TestRecordsAreValid: every constructor's record would be accepted by the
// store (a known outcome, JSON extra and args).
func TestRecordsAreValid(t *testing.T) {
	for _, c := range cases() {
		if c.name == "call" {
			continue // a call's record before its ending: not yet one the store takes
		}
		if !c.rec.Outcome.Valid() {
			t.Errorf("%s: outcome %q", c.name, c.rec.Outcome)
		}
		for what, b := range map[string][]byte{"args": c.rec.Args, "extra": c.rec.Extra} {
			if len(b) > 0 && !jsonValid(b) {
				t.Errorf("%s: %s %s is not JSON", c.name, what, b)
			}
		}
	}
}

func TestCanonicalSeq(t *testing.T) {
	r := finished()
	r.Seq = 7
	if seq, ok := audit.CanonicalSeq(r.Canonical()); !ok || seq != 7 {
		t.Errorf("v1: %d %v", seq, ok)
	}
	r.Instance = "b"
	if seq, ok := audit.CanonicalSeq(r.Canonical()); !ok || seq != 7 {
		t.Errorf("v2: %d %v", seq, ok)
	}
	enc := r.Canonical()
	for _, bad := range [][]byte{nil, enc[:7], enc[:20], append([]byte{}, enc[:8]...)} {
		if _, ok := audit.CanonicalSeq(bad); ok {
			t.Errorf("CanonicalSeq(%x) ok", bad)
		}
	}
	other := append([]byte{}, enc...)
	other[10] = 'X' // the tag
	if _, ok := audit.CanonicalSeq(other); ok {
		t.Error("a foreign tag was read")
	}
}

func TestOutcomeOf(t *testing.T) {
	for code, want := range map[violation.Code]audit.Outcome{
		violation.PolicyDenied: audit.OutcomeDenied, violation.ProvenanceDenied: audit.OutcomeDenied, violation.PhaseBlocked: audit.OutcomeDenied,
		violation.KillSwitchEngaged: audit.OutcomeDenied, violation.LimitExceeded: audit.OutcomeDenied,
		violation.ApprovalRequired: audit.OutcomeDenied, violation.Internal: audit.OutcomeError,
		violation.AuditUnavailable: audit.OutcomeError, violation.Unavailable: audit.OutcomeError,
		violation.Cancelled: audit.OutcomeCancelled, violation.PathOutsidePools: audit.OutcomeViolation,
		violation.UnknownTool: audit.OutcomeViolation, violation.InvalidArguments: audit.OutcomeViolation,
	} {
		if got := audit.OutcomeOf(code); got != want {
			t.Errorf("OutcomeOf(%s) = %s, want %s", code, got, want)
		}
	}
}
