package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
)

// helpText is each command's help: what `airlock CMD -h` prints to stdout
// before exiting 0 without running anything. TestHelpNamesEveryFlag keeps
// it in step with the flags each command defines.
var helpText = map[string]string{
	"serve": `Usage: airlock serve [--config FILE] [--state DIR] [--http ADDR] [--context HANDLE] [--log-level LEVEL] [--log-format FORMAT]

Run the MCP server: stdio by default (one client, e.g. Claude Desktop), or
streamable HTTP at /mcp and SSE at /sse with --http.

  --config FILE      configuration file (default: the embedded demo configuration)
  --state DIR        state directory (default $AIRLOCK_STATE, else $XDG_STATE_HOME/airlock,
                     else ~/.local/state/airlock)
  --http ADDR        serve HTTP on ADDR (e.g. 127.0.0.1:8080) instead of stdio
  --context HANDLE   stdio: run in the child context with this handle (airlock context create)
  --log-level LEVEL  debug, info (default), warn, error; logs go to stderr
  --log-format FORMAT  text (default) or json: one object per line; each tool call logs one
                     info line (call id, context, tool, decision, rule, outcome, duration)
`,
	"audit": `Usage: airlock audit verify [--incremental | --witness FILE | --segments DIR] [--state DIR]
       airlock audit tail [-n N] [--follow] [--json] [--state DIR]
       airlock audit export [--format jsonl] [--from SEQ] [--cursor FILE] [--follow] [--poll D] [--state DIR]
       airlock audit rotate --before SEQ | --older-than DURATION --out DIR [--state DIR]

verify   check the hash chain and the witness checkpoints (exit 1 and the first bad record)
tail     print the last records as a table (or JSON lines), optionally following new ones
export   print the records as JSON lines (each with its seq) in chain order, from --from or
         the cursor on; with --follow keep printing new ones (for a SIEM)
rotate   move the oldest records into a sealed segment file in --out and delete them from
         the store, leaving a signed anchor (the chain still verifies)

  --state DIR     state directory (as for serve)
  -n N            tail: number of records (default 20)
  --follow        tail, export: keep printing new records
  --poll D        tail, export --follow: how often to look for new records (default 500ms)
  --format jsonl  export: the output format (the only one)
  --from SEQ      export: first seq to print (default 1); resume with the last seq seen + 1
  --cursor FILE   export: read the next seq from FILE at start (if it exists) and replace it
                  atomically after every flushed batch and on SIGINT/SIGTERM
  --json          tail: JSON lines instead of a table
  --witness FILE  verify: check against this witness file (e.g. a mirror)
  --incremental   verify: only the records after the last successful verification's signed
                  marker (verified.mark); a full check when there is none
  --segments DIR  verify: also check the rotated segments in DIR, as one chain with the store
  --before SEQ    rotate: move the records before SEQ
  --older-than D  rotate: move the records older than D (e.g. 720h)
  --out DIR       rotate: where the sealed segment goes (created 0700 if missing)
`,
	"pools": `Usage: airlock pools manifest DIR
       airlock pools verify [--config FILE] [--state DIR]

manifest  print a SHA256SUMS manifest for DIR (save it as DIR/SHA256SUMS)
verify    hash every configured pool against its manifest

  --config FILE  configuration file (default: the embedded demo)
  --state DIR    state directory (the demo pools are written there)
`,
	"kill": `Usage: airlock kill --reason TEXT [--wait DURATION] [--state DIR]
       airlock kill --release [--reason TEXT] [--state DIR]
       airlock kill --status [--state DIR]

Engage the kill switch: every server on the state directory refuses every
call at once. It trips even while another process holds the store's lock.

  --reason TEXT     why (recorded in the audit trail; required to engage)
  --release         release the kill switch instead
  --status          only show whether it is engaged
  --wait DURATION   how long to retry the audit record while the store is locked (default 1m)
  --state DIR       state directory (as for serve)
`,
	"config": `Usage: airlock config check FILE
       airlock config schema

check   load and check a configuration file (errors name file:line)
schema  print the configuration's JSON Schema
`,
	"policy": `Usage: airlock policy check FILE
       airlock policy test FILE CASES.yaml [-v] [--run REGEXP] [--json] [--coverage] [--require-coverage]
       airlock policy fmt [--check] FILE
       airlock policy explain FILE --call JSON [--policy NAME] [--json]
       airlock policy schema

check    compile the policies in FILE (a config or a policy file)
test     run a case table against them (exit 1 if a case fails)
fmt      rewrite FILE in canonical YAML, the style of the README and the demo
         (2-space indent, original key order, short scalar lists in flow style,
         a blank line between top-level sections, aligned end-of-line comments);
         refused if the result would mean something else. Comments above a key
         or at the end of its line are kept; others (e.g. after the last node)
         are dropped, and anchors are expanded: check with --check first
explain  show the decision for one call and why
schema   print the JSON Schema

  -v                  test: print every case with its decision, rule and reason
  --run REGEXP        test: run only the cases whose name matches REGEXP
  --json              test, explain: print JSON
  --coverage          test: list the patterns and rules no case hit
  --require-coverage  test: also exit 1 if one is hit by no case
  --check             fmt: write nothing; exit 1 if FILE is not formatted
  --call JSON         explain: the call, e.g. {"capability":"pool.read","args":{"pool":"sales"}}; @FILE reads a file
  --policy NAME       explain: the policy (default: the file's only one)
`,
	"report": `Usage: airlock report SESSION [--state DIR]

Print a session's Sources Used report (markdown): every pool file read, every
external source, every pipeline run, with hashes.

  --state DIR  state directory (as for serve)
`,
	"doctor": `Usage: airlock doctor [--config FILE] [--state DIR]

Report what airlock serve with the same configuration and state will do
with run_pipeline on this host: the sandbox mechanisms and the self-test
serve runs at start (through this very binary: one built with cgo is
refused), the configuration's pipelines and directories. Exit 1 when the
configured pipelines would be refused, with the reason.

  --config FILE  configuration file (default: the embedded demo, as for serve)
  --state DIR    state directory (as for serve)
`,
	"attribution": `Usage: airlock attribution verify FILE [--session ID] [--state DIR]

Verify the signed attribution of a saved tool result (JSON).

  --session ID  the session the result must belong to (default: the one it names)
  --state DIR   state directory (holds the signing key)
`,
	"approvals": `Usage: airlock approvals list [--all] [--state DIR]
       airlock approvals show ID [--state DIR]
       airlock approvals approve ID [--endorse] [--reason TEXT] [--state DIR]
       airlock approvals deny ID --reason TEXT [--state DIR]

list     declarations waiting for a decision (--all: every one), with the
         origin of each argument (trusted, endorsed, untrusted, agent)
show     one declaration: what, why, where, and where each argument's value
         came from (quoted, cut, hidden characters escaped, sources named)
approve  approve one (single use, expires)
deny     deny one; the reason is shown to the agent

  --all          list: every declaration, not only those waiting
  --endorse      approve: also vouch for the need's untrusted and agent-written
                 values in its context only; later needs of that context using
                 them trace as endorsed (audited as context.endorse)
  --reason TEXT  why (shown to the agent, recorded in the audit trail)
  --state DIR    state directory (as for serve)
`,
	"upstreams": `Usage: airlock upstreams review [UPSTREAM] [--config FILE] [--offline] [--json] [--state DIR]
       airlock upstreams approve UPSTREAM TOOL SHA256 [TOOL SHA256]... [--reason TEXT] [--override]
                                 [--description TEXT | --description-file FILE] [--state DIR]
       airlock upstreams approve UPSTREAM --all [--config FILE] [--reason TEXT] [--state DIR]

review   list the configured upstreams' tools again (a stdio upstream runs in
         the sandbox) and show every tool definition: its state (pending,
         approved, changed, removed), its digest, its description quoted,
         the review's score and signals (tool poisoning: hidden characters,
         authority tags, instructions to the model, other tools named,
         look-alike names, requests for data the tool does not need ...),
         and for a changed tool what changed since the approval
approve  approve the definition of each TOOL with that digest: the one review
         printed, whole or its first 16 or more hex digits; a definition that
         changed since is refused, the others approved (review prints the one
         command that approves all of an upstream's waiting, unflagged tools);
         one the review flags is refused unless --override (with --reason)
--all    approve every definition the last review of UPSTREAM showed, each
         by the digest it showed (printed and audited whole): the upstream is
         listed again first, and if anything changed since the review (a
         definition listed differently, a tool new or gone) nothing is
         approved; flagged definitions are left out (approve each on its own)

  --config FILE         review, approve --all: configuration naming the upstreams (default: the embedded demo)
  --offline             review: show the stored pins without listing the upstreams
  --json                review: each definition's signals, score and verdict as JSON
  --reason TEXT         approve: why (recorded in the audit trail; required with
                        --override or --description)
  --override            approve: approve a flagged definition anyway (audited as
                        operator.upstream_override with the score and signals)
  --description TEXT    approve: what the agent's catalog shows instead of the
                        upstream's description, for this digest only
  --description-file F  approve: as --description, read from a file
  --state DIR           state directory (as for serve)

       airlock upstreams status [--config FILE] [--json] [--state DIR]
status   each upstream's warm sessions, restarts, calls, errors, last error and
         latest call latency, as every serving instance last wrote them
`,
	"phase": `Usage: airlock phase CONTEXT planning|execution --reason TEXT [--state DIR]

Move a runtime context (an id from airlock context list, or a session onto
it) between planning and execution; every server applies it on the
context's next call.

  --reason TEXT  why (recorded in the audit trail; required)
  --state DIR    state directory (as for serve)
`,
	"context": `Usage: airlock context list [--principal P] [--state DIR]
       airlock context show CONTEXT [--state DIR]
       airlock context create --parent CONTEXT --reason TEXT [--pools a,b] [--policy NAME]
                              [--phase planning|execution] [--task-file FILE] [--config FILE] [--state DIR]
       airlock context endorse CONTEXT --value V --reason TEXT [--state DIR]

list     every context: principal, policy, phase, pools
show     one context, its usage, open sessions, trusted inputs and labelled results
create   a child that restricts its parent; prints the handle a client presents
endorse  vouch for a value in this context only (an orchestrator that knows
         it is right); needs of the context using it trace as endorsed

  --principal P    list: only this principal's contexts
  --parent ID      create: the context (or a session onto it) to restrict
  --pools a,b      create: subset of the parent's pools (default: the parent's)
  --policy NAME    create: the parent's policy or one that extends it
  --phase PHASE    create: planning (default) or execution
  --reason TEXT    create, endorse: why (recorded in the audit trail)
  --value V        endorse: the value (at most 4 KiB; audited by its HMAC)
  --task-file FILE create: the principal's task text, the context's trusted input for
                   provenance rules (at most 256 KiB; audited by its SHA-256)
  --config FILE    create: configuration whose policies apply (default: the embedded demo)
  --state DIR      state directory (as for serve)
`,
	"client-config": `Usage: airlock client-config claude|cursor|vscode|inspector [--config FILE] [--state DIR]

Print the entry that starts airlock serve from a client, with absolute paths
to this binary, the configuration and the state directory:

claude     Claude Desktop's claude_desktop_config.json (mcpServers)
cursor     Cursor's mcp.json (mcpServers)
vscode     VS Code's mcp.json (servers, type stdio)
inspector  the MCP inspector's command line (npx, the version e2e pins)

A client starts the server with its own environment and working directory:
Claude Desktop and the inspector drop $AIRLOCK_STATE and $XDG_STATE_HOME.
The entry therefore always passes --state, resolved here as the operator's
commands resolve it, so the server and airlock approvals, kill and audit
use the same store.

  --config FILE  configuration the server runs (default: the embedded demo); must load
  --state DIR    state directory (default as for serve: $AIRLOCK_STATE, else
                 $XDG_STATE_HOME/airlock, else ~/.local/state/airlock)
`,
	"init": `Usage: airlock init [--config FILE] [--state DIR] [DIR...]

Write a starter configuration: one untrusted pool per DIR (id from the
directory name) with its SHA256SUMS manifest (hidden files such as .env and
.git are left out), a deny-first policy that allows only listing and
reading the pools, and the stdio role bound to every pool. Nothing is
overwritten: an existing FILE or DIR/SHA256SUMS is refused before anything
is written.

  --config FILE  where to write the configuration (default airlock.yaml)
  --state DIR    the state directory the printed next steps pass to serve and
                 client-config (default as for serve)
`,
}

// helpFlags are the arguments that ask for help instead of running.
var helpFlags = []string{"-h", "-help", "--help", "help"}

// wantsHelp reports whether args ask for help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if slices.Contains(helpFlags, a) {
			return true
		}
	}
	return false
}

func printHelp(w io.Writer, name string) {
	if text, ok := helpText[name]; ok {
		fmt.Fprint(w, text)
		return
	}
	fmt.Fprintf(w, "Usage: airlock %s\n", name)
}

// Version is the version `airlock --version` prints; the build's module
// version and VCS revision are added when the binary carries them.
var Version = "0.1.0"

func printVersion(w io.Writer) {
	line := "airlock " + Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		var extra []string
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			extra = append(extra, v)
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				extra = append(extra, "commit "+s.Value[:12])
			}
		}
		extra = append(extra, bi.GoVersion)
		line += " (" + strings.Join(extra, ", ") + ")"
	}
	fmt.Fprintln(w, line)
}
