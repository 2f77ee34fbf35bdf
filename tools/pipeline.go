package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runmark"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/workspace"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/schemas"
	"github.com/airlock-dev/airlock/sources"
)

// RunPipelineArgs are run_pipeline's arguments.
type RunPipelineArgs struct {
	Pipeline string         `json:"pipeline" jsonschema:"minLength=1,maxLength=64,description=Name of a pipeline declared in the server's configuration."`
	Params   map[string]any `json:"params,omitempty" jsonschema:"description=Values for the pipeline's declared parameters."`
}

// Validate implements toolkit.Args.
func (a *RunPipelineArgs) Validate() error {
	if a.Pipeline == "" || len(a.Pipeline) > 64 {
		return invalid("pipeline", "required, at most 64 characters")
	}
	if len(a.Params) > 32 {
		return invalid("params", "at most 32 parameters")
	}
	return nil
}

const runPipelineDescription = "Runs a pipeline declared in Airlock's configuration over the session's bound pools, in a sandbox: pools read-only, " +
	"writes only to the pipeline's declared outputs, no network, time/CPU/memory limits. Returns the outputs' SHA-256 hashes, " +
	"a snapshot hash and a source-usage summary; the pipeline's own stdout/stderr come back fenced. " +
	"No parameter value may start with '-': strings that do and negative numbers are refused."

func runPipeline() toolkit.Tool {
	return toolkit.Tool{
		Name:         "run_pipeline",
		Title:        "Run a pipeline",
		Description:  runPipelineDescription,
		Tier:         toolkit.TierAct,
		Destructive:  false,
		InputSchema:  schemas.MustReflect(&RunPipelineArgs{}),
		OutputSchema: outputSchema("run_pipeline"),
		Catalog:      pipelineCatalog,
		NewArgs:      func() toolkit.Args { return &RunPipelineArgs{} },
		Capability:   func(a toolkit.Args) string { return "pipeline.run:" + a.(*RunPipelineArgs).Pipeline },
		Precheck:     pipelinePrecheck,
		Handle:       pipelineHandle,
	}
}

// pipelinePrecheck is the source binding guard (seed 000): the pipeline must
// exist, its parameters must type-check, every input must be a pool bound to
// this session, the policy's filesystem section must cover what it reads and
// writes, and the sandbox must be able to confine it.
func pipelinePrecheck(env *toolkit.Env, a toolkit.Args) error {
	args := a.(*RunPipelineArgs)
	p, ok := env.Config.Pipeline(args.Pipeline)
	if !ok {
		return violation.New(violation.NotFound, "no pipeline named %q", args.Pipeline)
	}
	if _, err := checkParams(p, args.Params); err != nil {
		return err
	}
	for _, in := range p.Inputs {
		if _, err := env.Sources.PoolPath(in); err != nil {
			return err
		}
		if err := env.Policy.CheckRead("pools/" + in); err != nil {
			return violation.Wrap(violation.PolicyDenied, err, "policy filesystem.read does not cover pools/%s", in)
		}
	}
	for _, out := range p.Outputs {
		if err := env.Policy.CheckWrite("out/" + out); err != nil {
			return violation.Wrap(violation.WriteAttempt, err, "policy filesystem.write does not cover out/%s", out)
		}
	}
	if env.Pipelines.Sandbox == nil {
		return violation.Wrap(violation.Unavailable, env.Pipelines.Unavailable,
			"the sandbox cannot confine pipelines on this host, so none run (see `airlock doctor`)")
	}
	return nil
}

func pipelineHandle(ctx context.Context, env *toolkit.Env, a toolkit.Args) (*toolkit.Result, error) {
	args := a.(*RunPipelineArgs)
	p, _ := env.Config.Pipeline(args.Pipeline)
	params, _ := checkParams(p, args.Params)
	ev := &Evidence{RunID: "run_" + uuid.NewString(), Pipeline: p.Name, ContextID: env.Session.ContextID, StartedAt: env.Now.UTC()}
	ev.Sources.ContextID = env.Session.ContextID
	for _, b := range env.Sources.Pools() {
		ev.Sources.PoolsBound = append(ev.Sources.PoolsBound, b.ID)
	}
	ev.Sources.PoolsUsed = slices.Clone(p.Inputs)
	ev.Sources.IntegrityVerified = true
	var pools []sandbox.Pool
	var verified []sources.VerifyReport
	for _, in := range p.Inputs {
		rep, err := env.Sources.VerifyPool(in)
		if err != nil {
			return nil, err
		}
		verified = append(verified, rep)
		ev.Sources.FilesAccessed += rep.Files
		dir, _ := env.Sources.PoolPath(in)
		// Exactly the manifest's names: a .env beside them is not in the
		// sandbox at all (sandbox.TestHostilePoolOnlyManifest).
		pools = append(pools, sandbox.Pool{ID: in, Dir: dir, Files: rep.Names})
	}
	// Marked while it lasts, so a run cut short by the process dying is
	// recorded (interrupted) and cleaned at the next start (runmark).
	mark, err := runmark.Begin(env.Pipelines.Marks, audit.Run{ID: ev.RunID, Pipeline: p.Name, ContextID: env.Session.ContextID,
		SessionID: env.Session.ID, Principal: env.Session.Principal, Role: env.Session.Role, Transport: env.Session.Transport, StartedAt: ev.StartedAt})
	if err != nil {
		return nil, fmt.Errorf("marking the run: %w", err)
	}
	defer mark.End()
	// The workspace holds only what is published; the pipeline writes to
	// its own tmpfs (sandbox.Spec.Collect hands it over), never to disk.
	ws, err := workspace.Create(env.Pipelines.RunsDir, ev.RunID, p.Outputs, false)
	if err != nil {
		return nil, fmt.Errorf("creating workspace: %w", err)
	}
	defer ws.Remove() // keeps published/
	spec, err := buildSpec(p, params, pools)
	if err != nil {
		return nil, err
	}
	// Credentials are added here, at the sandbox boundary, and only here:
	// the spec travels to the sandbox through a pipe, never to disk, the
	// audit or the evidence (issue 12 item 7).
	creds, scrub, err := env.Credentials.PipelineEnv(p.Name)
	if err != nil {
		return nil, violation.Wrap(violation.Unavailable, err, "a credential pipeline %s is configured with is unavailable (revoked or invalid); ask an operator", p.Name)
	}
	if len(creds) > 0 {
		spec.Env = append(spec.Env, creds...)
		slices.Sort(spec.Env)
	}
	capLimits(&spec.Limits, env.Policy.Limits())
	var col *workspace.Collected
	spec.Collect = func(out *os.Root) (err error) {
		// Pools are bound live: the run ended, so what it read must still
		// be what was verified, or nothing it wrote is published
		// (INTEGRITY_FAILURE; issue 26 item 9).
		for _, rep := range verified {
			if err := env.Sources.VerifyUnchanged(rep); err != nil {
				return err
			}
		}
		col, err = ws.CollectFrom(out)
		return err
	}
	stop := tickProgress(env, spec.Limits.Wall)
	res, err := env.Pipelines.Sandbox.Run(ctx, spec)
	stop()
	if se := (*sandbox.SetupError)(nil); errors.As(err, &se) && errors.Is(se, sandbox.ErrPoolUnreadable) {
		// Pools may lie anywhere (root binds them), but each file keeps its
		// mode: an operator's fix, named here by pool and file, never by
		// host path (server TestPipelinePoolUnderPrivateHome).
		return nil, violation.Wrap(violation.Unavailable, err, "pipeline %s cannot run: %s; ask an operator to make the pool's files readable by others (o+r)", p.Name, se.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if col == nil {
		return nil, fmt.Errorf("sandbox: the run's outputs were not collected")
	}
	// What the run prints leaves the boundary (response, evidence,
	// audit) only with its secrets replaced by their markers
	// (TestCredentialsNeverLeaveTheBoundary); an output file holding one
	// is not published at all.
	res.Stdout, res.Stderr = scrub.Bytes(res.Stdout), scrub.Bytes(res.Stderr)
	if err := withholdExposed(col, scrub); err != nil {
		return nil, err
	}
	ev.fill(res, col)
	if slices.Contains(res.LimitsHit, sandbox.LimitDisk) {
		quota := spec.Limits.DiskBytes
		if quota == 0 {
			quota = sandbox.DefaultLimits.DiskBytes
		}
		ev.Violations = append(ev.Violations, workspace.Violation{Code: violation.LimitExceeded, Path: ".",
			Detail: fmt.Sprintf("disk quota of %d bytes for /out and /tmp reached; writes past it failed (ENOSPC)", quota)})
		ev.Sources.Violations++
	}
	if len(col.Outputs) > 0 && col.Manifest != "" {
		ev.OutputPool, ev.OutputTrust = outputPoolID(ev.RunID), outputTrust(env, p.Inputs)
	}
	readers := outputReaders(env, p.Inputs)
	out := ev.result(res)
	if out.Untrusted != nil {
		// Scrubbed again after the fence's sanitizer: a secret printed
		// with U+200B between its letters is re-formed by sanitizing.
		out.Untrusted.Readers, out.Untrusted.Scrub = readers, scrub.String
	}
	if ev.OutputPool != "" {
		out.Derived = &toolkit.DerivedPool{ID: ev.OutputPool, Dir: col.PublishedDir, Manifest: col.Manifest,
			Trust: ev.OutputTrust, Readers: readers, Description: fmt.Sprintf("Outputs of run %s of pipeline %s", ev.RunID, p.Name)}
		// Inline outputs carry no label of their own: content only some
		// readers may see is read from the output pool, whose pages are
		// labelled with them.
		if ev.OutputTrust == "trusted" && readers == nil {
			out.Text += inlineOutputs(col)
		}
	}
	return out, nil
}

// withholdExposed refuses a run whose published outputs contain a secret
// it was given: the outputs and their manifest are removed before any
// pool is made of them, and the call fails with CREDENTIAL_EXPOSED naming
// the output and the credential id (never the value).
func withholdExposed(col *workspace.Collected, scrub toolkit.Scrubber) error {
	if len(col.Outputs) == 0 {
		return nil
	}
	root, err := os.OpenRoot(col.PublishedDir)
	if err != nil {
		return fmt.Errorf("opening the published outputs: %w", err)
	}
	defer root.Close()
	for _, o := range col.Outputs {
		f, err := root.Open(o.Name)
		if err != nil {
			return fmt.Errorf("scanning output %q: %w", o.Name, err)
		}
		id, err := scrub.Find(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("scanning output %q: %w", o.Name, err)
		}
		if id != "" {
			rmErr := errors.Join(os.RemoveAll(col.PublishedDir), removeIfSet(col.Manifest))
			return violation.Wrap(violation.CredentialExposed, errors.Join(errors.New("output holds a credential"), rmErr),
				"output %s contains credential %s; the run's outputs are withheld", fence.Quote(o.Name), id)
		}
	}
	return nil
}

func removeIfSet(path string) error {
	if path == "" {
		return nil
	}
	return os.Remove(path)
}

// outputPoolID names a run's output pool: "run-" and the run's uuid.
func outputPoolID(runID string) string { return "run-" + strings.TrimPrefix(runID, "run_") }

// outputTrust is the trust of the least-trusted input: a run over an
// untrusted pool may have copied anything from it into its outputs.
func outputTrust(env *toolkit.Env, inputs []string) string {
	for _, p := range env.Sources.Pools() {
		if slices.Contains(inputs, p.ID) && p.Trust != "trusted" {
			return "untrusted"
		}
	}
	return "trusted"
}

// outputReaders is who may see what a run over inputs produced: the meet
// of the input pools' readers (nil when all are public), since it may
// have copied anything from any of them.
func outputReaders(env *toolkit.Env, inputs []string) []string {
	var out []string
	for _, p := range env.Sources.Pools() {
		if slices.Contains(inputs, p.ID) {
			out = sources.MeetReaders(out, p.Readers)
		}
	}
	return out
}

// Small trusted text outputs come back inline, so a short answer needs no
// second call; the rest are read from the output pool.
const (
	maxInlineOutput = 2048
	maxInlineTotal  = 4096
)

func inlineOutputs(col *workspace.Collected) string {
	root, err := os.OpenRoot(col.PublishedDir)
	if err != nil {
		return ""
	}
	defer root.Close()
	var b strings.Builder
	total := 0
	for _, o := range col.Outputs {
		if o.Size > maxInlineOutput || total+int(o.Size) > maxInlineTotal {
			continue
		}
		data, err := root.ReadFile(o.Name)
		if err != nil || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			continue
		}
		total += len(data)
		fmt.Fprintf(&b, "--- output %s ---\n%s", fence.Quote(o.Name), data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// buildSpec turns a pipeline declaration into a sandbox spec: argv tokens
// replaced inside elements (never through a shell) by the stable sandbox
// paths (/out, /tmp, /pools/<id>: no host path of the run reaches the
// pipeline, and two runs see the same strings), a minimal environment,
// pools read-only with exactly their manifest's files, only /out (and
// /tmp) writable.
func buildSpec(p config.Pipeline, params map[string]string, pools []sandbox.Pool) (sandbox.Spec, error) {
	repl := map[string]string{"{out}": sandbox.OutDir}
	if p.AllowTemp {
		repl["{tmp}"] = sandbox.TempDir
	}
	for _, pl := range pools {
		repl["{pool."+pl.ID+"}"] = sandbox.PoolMountDir + "/" + pl.ID
	}
	for name, v := range params {
		repl["{param."+name+"}"] = v
	}
	argv := make([]string, len(p.Argv))
	for i, arg := range p.Argv {
		argv[i] = config.ArgvToken.ReplaceAllStringFunc(arg, func(tok string) string { return repl[tok] })
	}
	env := []string{"AIRLOCK_OUT=" + sandbox.OutDir, "LANG=C.UTF-8", "HOME=" + sandbox.OutDir}
	if p.AllowTemp {
		env = append(env, "TMPDIR="+sandbox.TempDir, "AIRLOCK_TMP="+sandbox.TempDir)
	}
	for _, pl := range pools {
		env = append(env, "AIRLOCK_POOL_"+envName(pl.ID)+"="+sandbox.PoolMountDir+"/"+pl.ID)
	}
	for k, v := range p.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	spec := sandbox.Spec{Argv: argv, Env: env, Dir: sandbox.OutDir, Pools: pools, Temp: p.AllowTemp,
		ReadOnly: slices.Clone(p.Files)}
	if p.Stdin == "params_json" {
		b, err := json.Marshal(params)
		if err != nil {
			return sandbox.Spec{}, err
		}
		spec.Stdin = b
	}
	spec.Limits = sandbox.Limits{
		Wall: ms(p.Limits.WallMS), CPU: ms(p.Limits.CPUMS), MemoryBytes: p.Limits.MemoryBytes,
		Procs: p.Limits.Procs, OutputBytes: p.Limits.OutputBytes, DiskBytes: p.Limits.DiskBytes,
	}
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = sandbox.DefaultLimits.Wall
	}
	return spec, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// capLimits lowers a run's CPU and memory limits to the policy's, so a
// pipeline declaration can never grant more than the role's policy allows.
func capLimits(l *sandbox.Limits, pol limits.Spec) {
	if c := ms(pol.MaxCPUTimeMS); c > 0 && (l.CPU == 0 || l.CPU > c) {
		l.CPU = c
	}
	if m := pol.MaxMemoryBytes; m > 0 && (l.MemoryBytes == 0 || l.MemoryBytes > m) {
		l.MemoryBytes = m
	}
}

func envName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, id)
}

// checkParams validates the agent's parameter values against the
// pipeline's declaration and renders them as strings. Values that start
// with '-' are refused: inside argv they could be read as options (the
// argument-injection cousin of shell injection).
func checkParams(p config.Pipeline, given map[string]any) (map[string]string, error) {
	out := map[string]string{}
	for name := range given {
		if _, ok := p.Parameters[name]; !ok {
			return nil, violation.New(violation.InvalidArguments, "pipeline %s has no parameter %q", p.Name, boundedName(name))
		}
	}
	for name, spec := range p.Parameters {
		v, ok := given[name]
		if !ok {
			if spec.Required {
				return nil, violation.New(violation.InvalidArguments, "parameter %q is required", name)
			}
			continue
		}
		s, err := paramString(spec, v)
		if err != nil {
			return nil, violation.Wrap(violation.InvalidArguments, err, "parameter %q: %v", name, err)
		}
		out[name] = s
	}
	return out, nil
}

var errParam = errors.New("invalid parameter")

func paramString(spec config.Param, v any) (string, error) {
	switch spec.Type {
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("want a boolean: %w", errParam)
		}
		return strconv.FormatBool(b), nil
	case "integer", "number":
		f, ok := v.(float64)
		if !ok || (spec.Type == "integer" && f != float64(int64(f))) {
			return "", fmt.Errorf("want %s: %w", spec.Type, errParam)
		}
		// A negative number renders with a leading '-': alone in an argv
		// element it is an option to the program (head -1, tail -5, gzip
		// -9), the injection the string rule below refuses. -0 too.
		if f < 0 || math.Signbit(f) {
			return "", fmt.Errorf("may not be negative (it would start with '-'): %w", errParam)
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	s, ok := v.(string)
	max := spec.MaxLength
	if max == 0 {
		max = 256
	}
	switch {
	case !ok:
		return "", fmt.Errorf("want a string: %w", errParam)
	case len(s) > max:
		return "", fmt.Errorf("longer than %d bytes: %w", max, errParam)
	case strings.HasPrefix(s, "-"):
		return "", fmt.Errorf("may not start with '-': %w", errParam)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("control characters: %w", errParam)
	case len(spec.Enum) > 0 && !slices.Contains(spec.Enum, s):
		return "", fmt.Errorf("not one of %v: %w", spec.Enum, errParam)
	case spec.Pattern != "" && !regexp.MustCompile("^(?:"+spec.Pattern+")$").MatchString(s):
		return "", fmt.Errorf("does not match %q: %w", spec.Pattern, errParam)
	}
	return s, nil
}

func boundedName(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// tickProgress sends a progress notification every second while a run lasts.
func tickProgress(env *toolkit.Env, wall time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		start := time.Now()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				env.Progress(time.Since(start).Seconds(), wall.Seconds(), "pipeline running")
			}
		}
	}()
	return func() { close(done) }
}
