package urlnorm

import (
	"fmt"
	"net/netip"
	"strings"
)

// Host returns the one form of a host name that is matched exactly
// against a configured list (the hosts a sandboxed upstream's egress
// proxy may reach): a DNS name in lower case (letters, digits, '-' and
// '.', labels of 1-63 bytes not starting or ending with '-', no trailing
// dot), or a canonical IP literal (IPv6 without brackets or zone).
// Refused, wrapping ErrInvalid: percent escapes, '*', empty labels, an
// IPv4 address spelled as IPv6 (one address, one spelling), and the
// legacy numeric forms ("127.1", "2130706433", "0x7f.1") that resolvers
// disagree on. TestHost; FuzzParseTarget (egress) checks Host(Host(h)).
func Host(h string) (string, error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" || a.Is4In6() {
			return "", fmt.Errorf("zoned or IPv4-mapped address: %w", ErrInvalid)
		}
		return a.String(), nil
	}
	h = strings.ToLower(h)
	if h == "" || len(h) > 253 {
		return "", fmt.Errorf("host length: %w", ErrInvalid)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("host label: %w", ErrInvalid)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("host character: %w", ErrInvalid)
			}
		}
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		// "127.1", "2130706433", "1.2.3.0x4": numeric forms some
		// resolvers read as addresses.
		return "", fmt.Errorf("numeric host: %w", ErrInvalid)
	}
	return h, nil
}

// PlainHostName reports whether a host name (not a bracketed literal)
// holds only ASCII letters, digits, '-', '_' and '.': the names Normalize
// keeps and the only ones a declared need may name (the need validator
// asks the same question, for its own message). Looser than Host: '_', a
// trailing dot and IPv4 literals pass.
func PlainHostName(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
