// Package declarations holds what an agent may say about external
// information: that it needs some (seed 002). An agent cannot fetch,
// search or query; it declares a [Need] — what (an [Operation]), where
// ([Parameters]) and why ([Justification]) — and the server decides, a
// person may approve, and the runner executes exactly what was approved,
// once.
//
// This package is pure: no I/O of its own. [Need.Validate] says what a
// well-formed need is; the [Manager] runs the lifecycle on a [Store]
// (SQLite and PostgreSQL in the store package). The contract every Store
// must pass, StoreConformance, is test code: it lives in declarationstest
// beside an in-memory Store, and the binary never links either.
//
// # Invariants
//
//   - An approval is single-use. [Manager.Begin] consumes it with one
//     compare-and-swap on the state (approved → executing): of any number
//     of concurrent executors exactly one wins; the others, and every later
//     replay, get [ErrAlreadyConsumed] (TestBeginConcurrent,
//     TestReplayRefused, declarationstest.StoreConformance/TransitionConcurrent).
//     A need the policy allows and that runs at once is created already
//     consumed ([Manager.NewExecuting]): no approval ever exists to
//     race for, and its end can be stored with the call's audit record
//     ([Manager.FinishLater], [Move]; execute.go).
//   - An approval covers one need exactly. The declaration keeps the
//     need's [Need.Fingerprint] (SHA-256 of [Need.Canonical]); Begin
//     refuses a stored need that no longer hashes to it ([ErrFingerprint],
//     TestFingerprintBinding).
//   - Approvals and pending declarations expire: an approval after
//     ApprovalTTL (15m), an undecided declaration after DeclarationTTL
//     (1h). Begin and Approve check the deadline themselves and expire what
//     is due ([ErrExpired]); [Manager.Expire] sweeps the rest.
//   - A declaration belongs to its session: Begin, Retry and Get from
//     another session fail with [ErrWrongContext] before any other check,
//     and the error names nothing of the owner's session (TestWrongContext).
//   - A failed execution is retried only through declared again, so it
//     needs a fresh approval (seed 001), and at most MaxAttempts (2)
//     executions happen in all ([ErrNoAttemptsLeft], TestRetryAttempts).
//   - The Manager makes only the moves in the table below and records each
//     in Declaration.History (TestTransitionTable, TestEveryTransition).
//
// # State machine
//
//	from \ to   declared  approved  denied  executing  executed  failed  expired
//	(new)       Declare   Declare   Declare
//	declared              Approve   Deny                                  deadline
//	approved                                Begin                         deadline
//	executing                                          Finish    Finish
//	failed      Retry*
//	denied, executed, expired: terminal          * while Attempts < MaxAttempts
//
//	                  Declare (policy: require_approval)
//	                             │
//	      ┌── Retry* ────────► declared ── Deny / policy deny ──► denied
//	      │                      │    └──── deadline ───────────► expired
//	      │         Approve / policy allow                           ▲
//	      │                      ▼                                   │
//	      │                  approved ───── deadline ────────────────┘
//	      │                      │
//	      │          Begin (consumes the approval)
//	      │                      ▼
//	      │                  executing ── Finish(ok) ──► executed
//	      │                      │
//	      │               Finish(error)
//	      │                      ▼
//	      └──────────────────  failed   (terminal once no attempts are left)
//
// Declare with a policy decision of allow or deny records the declared
// state and then the decision, by "policy:<rule>", in one Create.
//
// What each operation returns when the state is wrong: Approve, Deny,
// Begin and Retry give [ErrExpired] for an expired declaration; Begin gives
// [ErrAlreadyConsumed] for executing, executed and failed; anything else
// out of place is [ErrState]. Nothing changes on an error, except that a
// deadline found passed expires the declaration.
//
// # Validation
//
// [Need.Validate] reports the first bad field as a [*FieldError] naming it
// ("justification.user_request") and wrapping [ErrInvalid]; its text is
// meant for the agent and never repeats the input. The rules, and what
// each blocks, are listed on Validate. [ParseNeed] is the strict JSON
// reader for needs that do not come through the runner's schema check.
//
// # Limits
//
//   - Declaration.History is the declaration's own record, not the audit
//     trail: the runner audits each call, and an operator's or a
//     person's decision is audited by whoever calls Approve or Deny.
//   - Approve and Deny trust their by argument and check no session: the
//     caller authenticates the operator or the elicitation first.
//   - A process that dies between Begin and Finish leaves the declaration
//     executing for good; no sweep fails it, since whether the outside
//     world saw the request is unknown. An operator can see it listed.
//   - Deadlines are read on the Manager's clock; Managers on several
//     hosts sharing one database are only as consistent as their clocks.
//   - Validate judges form, not risk: whether a host may be reached (and
//     which address it resolves to) is for the policy and the fetcher at
//     connect time, and whether SQL only reads is for the query executor,
//     which opens the database read-only. IPv4 literals in any notation
//     the fetcher's resolver accepts pass as host names.
//   - The jsonschema tags count characters where Validate counts bytes, so
//     a schema check alone accepts more than Validate.
package declarations
