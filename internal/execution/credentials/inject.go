package credentials

import (
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
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
