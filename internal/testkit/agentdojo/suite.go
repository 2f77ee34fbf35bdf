// Package agentdojo replays AgentDojo's prompt-injection benchmark through
// Airlock without a language model: a scripted agent declares each
// ground-truth call of a task (and, in the attack arms, the injection task's
// calls) as a comm.mcp need, a fake upstream MCP server answers with the
// recorded results, and the harness scores what Airlock let through. See
// README.md in this directory.
package agentdojo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/rawjson"
)

// Suite is one exported AgentDojo suite (testdata/agentdojo/*.json).
type Suite struct {
	Name             string                    `json:"suite"`
	Source           map[string]any            `json:"source"`
	Tools            []Tool                    `json:"tools"`
	InjectionVectors map[string]Vector         `json:"injection_vectors"`
	AttackTemplate   AttackTemplate            `json:"attack_template"`
	UserTasks        map[string]*UserTask      `json:"user_tasks"`
	InjectionTasks   map[string]*InjectionTask `json:"injection_tasks"`
}

// Tool is one tool of the suite as AgentDojo gives it to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Vector is one injection vector: where the attacker's text lands.
type Vector struct {
	Description string `json:"description"`
	// Default is the benign text as written in the suite's YAML file
	// (escapes not decoded).
	Default string `json:"default"`
}

// AttackTemplate is AgentDojo's important_instructions attack.
type AttackTemplate struct {
	Name     string            `json:"name"`
	Template string            `json:"template"`
	Defaults map[string]string `json:"defaults"`
}

// UserTask is what the user asked and the calls that solve it.
type UserTask struct {
	ID          string   `json:"-"`
	Prompt      string   `json:"prompt"`
	Calls       []Call   `json:"calls"`
	VectorsSeen []string `json:"vectors_seen"`
}

// Call is one ground-truth call with the result the agent sees, canaries
// ({{INJECTION:<vector>}}) in place of the injection texts.
type Call struct {
	Function      string          `json:"function"`
	Args          json.RawMessage `json:"args"`
	Result        string          `json:"result"`
	Render        string          `json:"render"`
	ResultValue   json.RawMessage `json:"result_value,omitempty"`
	ResultDefault *string         `json:"result_default,omitempty"`
}

// InjectionTask is the attacker's goal and the calls that reach it.
type InjectionTask struct {
	ID    string     `json:"-"`
	Goal  string     `json:"goal"`
	Calls []ToolCall `json:"calls"`
}

// ToolCall is a call without a result.
type ToolCall struct {
	Function string          `json:"function"`
	Args     json.RawMessage `json:"args"`
}

// LoadSuite reads and checks a suite file.
func LoadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSuite(data)
}

// ParseSuite decodes a suite and checks what the replay relies on.
func ParseSuite(data []byte) (*Suite, error) {
	var s Suite
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if s.Name == "" {
		return nil, fmt.Errorf("suite: no suite name")
	}
	tools := map[string]bool{}
	for _, t := range s.Tools {
		tools[t.Name] = true
	}
	for id, u := range s.UserTasks {
		u.ID = id
		for i, c := range u.Calls {
			if !tools[c.Function] {
				return nil, fmt.Errorf("suite %s: %s call %d: unknown tool %q", s.Name, id, i, c.Function)
			}
			if c.Render == "repr" && len(c.ResultValue) == 0 {
				return nil, fmt.Errorf("suite %s: %s call %d: render repr without result_value", s.Name, id, i)
			}
		}
		for _, v := range u.VectorsSeen {
			if _, ok := s.InjectionVectors[v]; !ok {
				return nil, fmt.Errorf("suite %s: %s sees unknown vector %q", s.Name, id, v)
			}
		}
	}
	for id, it := range s.InjectionTasks {
		it.ID = id
		for i, c := range it.Calls {
			if !tools[c.Function] {
				return nil, fmt.Errorf("suite %s: %s call %d: unknown tool %q", s.Name, id, i, c.Function)
			}
		}
	}
	return &s, nil
}

// UserTaskIDs are the user tasks in natural order (user_task_2 before
// user_task_10).
func (s *Suite) UserTaskIDs() []string { return naturalKeys(s.UserTasks) }

// InjectionTaskIDs are the injection tasks in natural order.
func (s *Suite) InjectionTaskIDs() []string { return naturalKeys(s.InjectionTasks) }

func naturalKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return naturalLess(keys[i], keys[j]) })
	return keys
}

// naturalLess orders by the text before the trailing number, then by the
// number.
func naturalLess(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}

// AttackPairs are the (user task, injection task) pairs of the attack
// arm: every injection task against every user task that sees at least
// one vector, in natural order.
func (s *Suite) AttackPairs() [][2]string {
	var out [][2]string
	for _, uid := range s.UserTaskIDs() {
		if len(s.UserTasks[uid].VectorsSeen) == 0 {
			continue
		}
		for _, iid := range s.InjectionTaskIDs() {
			out = append(out, [2]string{uid, iid})
		}
	}
	return out
}

// readPrefixes name the tools that only read the suite's own data. An
// injection call to any other tool is an effect; get_webpage is one too,
// since it sends a request to a URL the attacker chose.
var readPrefixes = []string{"get_", "read_", "search_", "list_", "check_"}

// IsEffect reports whether a call to tool acts on the world (sends,
// changes, or reaches out) rather than reading the suite's own data.
func IsEffect(tool string) bool {
	if tool == "get_webpage" {
		return true
	}
	for _, p := range readPrefixes {
		if strings.HasPrefix(tool, p) {
			return false
		}
	}
	return true
}

// Scorable reports whether an injection task has an effect call at all
// (travel's injection_task_6 only asks the model to say something).
func (it *InjectionTask) Scorable() bool {
	for _, c := range it.Calls {
		if IsEffect(c.Function) {
			return true
		}
	}
	return false
}

// canonicalJSON re-encodes a JSON value with sorted keys, compact, no HTML
// escaping: two argument objects are the same call when these bytes are.
func canonicalJSON(raw []byte) (string, error) {
	var v any
	// Numbers as float64: 100 and 100.0 are the same argument.
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := rawjson.Plain(v)
	return string(b), err
}
