package credentials

import (
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// Hosts injects the header credentials of one role into comm.fetch
// requests and remembers what it injected for the call's Scrubber. It
// implements comm.HeaderSource.
type Hosts struct {
	set  *Set
	role string
	sc   *Scrubber
}

// ForHosts returns the header injector of a call made by role, recording
// every secret it injects in sc.
func (s *Set) ForHosts(role string, sc *Scrubber) *Hosts {
	if !s.Configured() {
		return nil
	}
	return &Hosts{set: s, role: role, sc: sc}
}

// Header is one header to set on a request.
type Header struct{ Name, Value string }

// HeadersFor returns the headers for a request to host (the request
// URL's normalised host[:port]): those of every credential of the role
// that names exactly this host. Each hop of a redirect chain asks again
// with its own host, so a redirect to another host carries none of them
// (server's TestCredentialsNeverLeaveTheBoundary). A credential that cannot
// be read fails the request (*Error wrapping ErrRevoked or ErrInvalid).
func (h *Hosts) HeadersFor(host string) ([]Header, error) {
	if h == nil {
		return nil, nil
	}
	var out []Header
	for _, c := range *h.set.creds.Load() {
		if c.Header == nil || !slices.Contains(c.Roles, h.role) || !slices.Contains(c.Header.Hosts, host) {
			continue
		}
		v, err := h.set.read(c)
		if err != nil {
			return nil, err
		}
		rendered := strings.Replace(c.Header.Value, config.SecretPlaceholder, v, 1)
		h.sc.add(c.ID, rendered, v)
		out = append(out, Header{Name: c.Header.Name, Value: rendered})
	}
	return out, nil
}

// HTTPHeaders is HeadersFor in the form comm.FetchOptions.Headers takes;
// nil (inject nothing) when h is nil.
func (h *Hosts) HTTPHeaders() func(string) (http.Header, error) {
	if h == nil {
		return nil
	}
	return func(host string) (http.Header, error) {
		hs, err := h.HeadersFor(host)
		if err != nil || len(hs) == 0 {
			return nil, err
		}
		out := http.Header{}
		for _, x := range hs {
			out.Add(x.Name, x.Value)
		}
		return out, nil
	}
}

// ForPipelines is the role's credentials as run_pipeline takes them: each
// run gets its own Scrubber of what it was given.
func (s *Set) ForPipelines(role string) toolkit.PipelineCredentials {
	return pipelineCredentials{set: s, role: role}
}

type pipelineCredentials struct {
	set  *Set
	role string
}

func (p pipelineCredentials) PipelineEnv(pipeline string) ([]string, toolkit.Scrubber, error) {
	sc := &Scrubber{}
	env, err := p.set.PipelineEnv(p.role, pipeline, sc)
	return env, sc, err
}

// PipelineEnv returns the NAME=secret entries of the role's credentials
// for pipeline, and records them in sc. A credential that cannot be read
// fails the run (*Error).
func (s *Set) PipelineEnv(role, pipeline string, sc *Scrubber) ([]string, error) {
	if !s.Configured() {
		return nil, nil
	}
	var env []string
	for _, c := range *s.creds.Load() {
		if c.Env == nil || !slices.Contains(c.Roles, role) || !slices.Contains(c.Env.Pipelines, pipeline) {
			continue
		}
		v, err := s.read(c)
		if err != nil {
			return nil, err
		}
		sc.add(c.ID, v)
		env = append(env, c.Env.Name+"="+v)
	}
	return env, nil
}
