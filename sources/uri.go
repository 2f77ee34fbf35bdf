package sources

import (
	"net/url"
	"strings"
)

// FileURITemplate is the RFC 6570 template of [FileURI], as MCP resource
// templates advertise it.
const FileURITemplate = "airlock://pool/{pool}/{+path}"

// FileURI names a pool file without revealing where the pool lives on the
// host: airlock://pool/{pool}/{path}. Results of read_pool_file carry it,
// and the MCP resources that serve pool files answer to it.
func FileURI(pool, path string) string {
	return (&url.URL{Scheme: "airlock", Host: "pool", Path: "/" + pool + "/" + path}).String()
}

// ParseFileURI splits a FileURI. The path is not checked here: it goes to
// the same checks as any read_pool_file path.
func ParseFileURI(uri string) (pool, path string, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "airlock" || u.Host != "pool" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", false
	}
	pool, path, ok = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	return pool, path, ok && pool != "" && path != ""
}
