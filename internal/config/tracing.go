package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
)

// Tracing configures OpenTelemetry traces of governed calls (package
// tracing, issue 12 item 3). Off unless Enabled or the standard OTEL_*
// variables turn it on; OTEL_SDK_DISABLED=true turns it off whatever is
// here.
type Tracing struct {
	Enabled     bool                   `json:"enabled,omitempty" jsonschema:"description=Export a span per governed call over OTLP/HTTP (default off; OTEL_TRACES_EXPORTER=otlp or an OTEL_EXPORTER_OTLP_*ENDPOINT variable also turn it on)."`
	Endpoint    string                 `json:"endpoint,omitempty" jsonschema:"description=OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces); default from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT\\, else http://localhost:4318/v1/traces."`
	Headers     map[string]TokenSource `json:"headers,omitempty" jsonschema:"description=Headers sent to the collector (e.g. Authorization)\\, each read from an env var or a file."`
	SampleRatio *float64               `json:"sample_ratio,omitempty" jsonschema:"minimum=0,maximum=1,description=Fraction of calls without a sampled parent that are traced (default 1; a caller's sampled traceparent is followed)."`
	ServiceName string                 `json:"service_name,omitempty" jsonschema:"description=service.name of the spans (default airlock; OTEL_SERVICE_NAME overrides)."`
}

func (c *Config) checkTracing() error {
	t := c.Tracing
	if t.Endpoint != "" {
		u, err := url.Parse(t.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			// The value is not echoed: it may hold a password.
			return c.at("$.tracing.endpoint", fmt.Errorf("not an http(s) URL with a host and without user info (put credentials in tracing.headers): %w", ErrInvalid))
		}
	}
	if t.SampleRatio != nil && (*t.SampleRatio < 0 || *t.SampleRatio > 1) {
		return c.at("$.tracing.sample_ratio", fmt.Errorf("%v is not within 0..1: %w", *t.SampleRatio, ErrInvalid))
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		h := t.Headers[k]
		if !headerNameRE.MatchString(k) || (h.Env == "") == (h.File == "") {
			return c.at("$.tracing.headers."+k, fmt.Errorf("a header name with exactly one of env or file: %w", ErrInvalid))
		}
	}
	return nil
}
