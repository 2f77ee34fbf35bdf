package config

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Pipeline is a named command the agent may run with run_pipeline, over
// read-only pools, inside the sandbox. The agent chooses only the pipeline's
// name and the values of its declared parameters; everything else is here.
type Pipeline struct {
	Name        string            `json:"name" jsonschema:"pattern=^[a-z0-9][a-z0-9_.-]{0\\,63}$,description=Name the agent passes to run_pipeline; the capability is pipeline.run:<name>."`
	Description string            `json:"description" jsonschema:"maxLength=4096,description=What the pipeline does; shown to the agent."`
	Argv        []string          `json:"argv" jsonschema:"minItems=1,description=The command as an argument vector (never a shell string). Tokens {pool.ID} {out} {tmp} {param.NAME} are replaced inside elements by the stable sandbox paths /pools/ID /out /tmp and the parameter's value."`
	Inputs      []string          `json:"inputs,omitempty" jsonschema:"description=Pool ids the pipeline reads; each must be bound to the calling session."`
	Outputs     []string          `json:"outputs" jsonschema:"minItems=1,description=Output files (relative to the run's out dir) the pipeline may produce; anything else it writes is discarded as a WRITE_ATTEMPT."`
	Files       []string          `json:"files,omitempty" jsonschema:"description=Extra files the pipeline needs to read (scripts); relative to the config file."`
	AllowTemp   bool              `json:"allow_temp,omitempty" jsonschema:"description=Give the run a writable scratch directory ({tmp} and TMPDIR)."`
	Env         map[string]string `json:"env,omitempty" jsonschema:"description=Environment variables for the pipeline; nothing else of the server's environment is passed."`
	Parameters  map[string]Param  `json:"parameters,omitempty" jsonschema:"description=Typed parameters the agent may set."`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"enum=none,enum=params_json,description=What the pipeline reads on stdin: nothing (default) or its parameters as a JSON object."`
	Limits      PipelineLimits    `json:"limits,omitempty" jsonschema:"description=Resource limits of one run (also capped by the policy's limits)."`
}

// Param is one typed parameter of a pipeline.
type Param struct {
	Type        string   `json:"type" jsonschema:"enum=string,enum=integer,enum=number,enum=boolean"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Enum        []string `json:"enum,omitempty" jsonschema:"description=Allowed values (strings)."`
	Pattern     string   `json:"pattern,omitempty" jsonschema:"description=Regular expression a string value must match in full."`
	MaxLength   int      `json:"max_length,omitempty" jsonschema:"minimum=0,description=Longest string value (default 256)."`
}

// PipelineLimits bound one run. Zero means the sandbox default.
type PipelineLimits struct {
	WallMS      int64 `json:"wall_ms,omitempty" jsonschema:"minimum=0,description=Wall-clock limit; the whole process tree is killed (default 60000)."`
	CPUMS       int64 `json:"cpu_ms,omitempty" jsonschema:"minimum=0,description=CPU time per process (default 30000)."`
	MemoryBytes int64 `json:"memory_bytes,omitempty" jsonschema:"minimum=0,description=Memory of the whole run (default 536870912)."`
	Procs       int   `json:"procs,omitempty" jsonschema:"minimum=0,description=Processes and threads of the run (default 64)."`
	OutputBytes int64 `json:"output_bytes,omitempty" jsonschema:"minimum=0,description=Captured stdout and stderr, each (default 1048576)."`
	DiskBytes   int64 `json:"disk_bytes,omitempty" jsonschema:"minimum=0,description=Quota of everything the run writes to /out and /tmp together, a size-limited tmpfs; writes past it fail with ENOSPC (default 134217728)."`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// ArgvToken matches the substitutions allowed inside argv elements. Any
// other brace is literal text (an awk or Python program keeps its braces).
var ArgvToken = regexp.MustCompile(`\{(?:out|tmp|pool\.[a-z0-9][a-z0-9_.-]{0,63}|param\.[a-z0-9][a-z0-9_.-]{0,63})\}`)

// checkPipelines validates the pipelines section against the pools.
func (c *Config) checkPipelines(pools map[string]bool) error {
	seen := map[string]bool{}
	for i, p := range c.Pipelines {
		at := c.itemAt("$.pipelines", i)
		if err := checkName(seen, nameRE, "pipeline name", p.Name); err != nil {
			return at(".name", err)
		}
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			return at(".argv", fmt.Errorf("argv needs a command: %w", ErrInvalid))
		}
		for j, in := range p.Inputs {
			if !pools[in] {
				return at(fmt.Sprintf(".inputs[%d]", j), fmt.Errorf("pool %q: %w", in, ErrUnknownReference))
			}
		}
		if len(p.Outputs) == 0 {
			return at(".outputs", fmt.Errorf("declare at least one output: %w", ErrInvalid))
		}
		for j, o := range p.Outputs {
			if o == "" || path.IsAbs(o) || path.Clean(o) != o || strings.HasPrefix(o, "..") || strings.ContainsAny(o, "\\\x00") {
				return at(fmt.Sprintf(".outputs[%d]", j), fmt.Errorf("output %q must be a clean relative path: %w", o, ErrInvalid))
			}
		}
		for name, prm := range p.Parameters {
			if err := checkKey("parameter", name); err != nil {
				return at(".parameters."+name, err)
			}
			if prm.Pattern != "" {
				if _, err := regexp.Compile("^(?:" + prm.Pattern + ")$"); err != nil {
					return at(".parameters."+name+".pattern", fmt.Errorf("%v: %w", err, ErrInvalid))
				}
			}
		}
		for j, arg := range p.Argv {
			for _, tok := range ArgvToken.FindAllString(arg, -1) {
				if err := checkToken(tok, p, pools); err != nil {
					return at(fmt.Sprintf(".argv[%d]", j), err)
				}
			}
		}
	}
	return nil
}

func checkToken(tok string, p Pipeline, pools map[string]bool) error {
	inner := tok[1 : len(tok)-1]
	switch {
	case inner == "out":
	case inner == "tmp":
		if !p.AllowTemp {
			return fmt.Errorf("%s needs allow_temp: true: %w", tok, ErrInvalid)
		}
	case strings.HasPrefix(inner, "pool."):
		id := strings.TrimPrefix(inner, "pool.")
		if !pools[id] || !contains(p.Inputs, id) {
			return fmt.Errorf("%s: pool %q is not among the pipeline's inputs: %w", tok, id, ErrUnknownReference)
		}
	case strings.HasPrefix(inner, "param."):
		if _, ok := p.Parameters[strings.TrimPrefix(inner, "param.")]; !ok {
			return fmt.Errorf("%s: no such parameter: %w", tok, ErrUnknownReference)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Pipeline returns the pipeline named name.
func (c *Config) Pipeline(name string) (Pipeline, bool) {
	for _, p := range c.Pipelines {
		if p.Name == name {
			return p, true
		}
	}
	return Pipeline{}, false
}
