package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxDocumentBytes bounds a metadata, key set or introspection answer: an
// authorization server (or whoever sits in its place) cannot make Airlock
// hold more than this.
const maxDocumentBytes = 1 << 20

// fetchTimeout bounds one request to an authorization server.
const fetchTimeout = 10 * time.Second

// newHTTPClient is the client for authorization servers: bounded in time,
// and redirects refused, so a metadata or key set URL cannot be bent to
// another host after the configuration named it.
func newHTTPClient() *http.Client {
	return &http.Client{
		Timeout: fetchTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirect refused")
		},
	}
}

// getJSON fetches u and decodes its JSON body into out.
func getJSON(ctx context.Context, c *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return doJSON(c, req, out)
}

func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocumentBytes))
		return fmt.Errorf("%s %s: status %d", req.Method, req.URL.Redacted(), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", req.URL.Redacted(), err)
	}
	if len(body) > maxDocumentBytes {
		return fmt.Errorf("%s: answer over %d bytes", req.URL.Redacted(), maxDocumentBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

// serverMetadata is the part of RFC 8414 / OpenID Connect discovery
// metadata Airlock uses.
type serverMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// discoveryURLs are the well-known locations of issuer's metadata, in the
// order the MCP authorization spec tries them: RFC 8414 with the path
// inserted after the well-known prefix, then OpenID Connect both ways.
func discoveryURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	if path == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}
}

// discover fetches issuer's metadata from the first well-known location
// that answers, and accepts it only if it names issuer itself: metadata
// for another issuer would let one server speak for another (mix-up,
// RFC 8414 section 3.3).
func discover(ctx context.Context, c *http.Client, issuer string) (*serverMetadata, error) {
	var errs []error
	for _, u := range discoveryURLs(issuer) {
		var m serverMetadata
		if err := getJSON(ctx, c, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer {
			return nil, fmt.Errorf("%s names issuer %.200q: %w", u, m.Issuer, ErrMetadataIssuer)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("discovering %s: %w", issuer, errors.Join(errs...))
}
