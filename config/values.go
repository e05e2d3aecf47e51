package config

import (
	"fmt"
	"math"
	"mime"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// This file holds the grammars of single values (sizes, durations, hosts,
// addresses, paths, header fields, media types). Each check returns "" when
// the value is good, else a message that says what would be right; the
// decoder attaches the position and key.

// sizeUnits maps the accepted size suffixes to their multipliers: binary
// units (KiB, MiB, GiB) are powers of 1024, decimal units (KB, MB, GB) powers
// of 1000. Suffixes are case-sensitive except for the SI spelling "kB": "mb"
// could mean megabits and is refused rather than guessed.
var sizeUnits = map[string]int64{
	"B":   1,
	"KiB": 1 << 10,
	"MiB": 1 << 20,
	"GiB": 1 << 30,
	"KB":  1000,
	"kB":  1000,
	"MB":  1000 * 1000,
	"GB":  1000 * 1000 * 1000,
}

const sizeExample = `expected a size such as 65536, "64KiB" or "1MB"`

// ParseSize parses a size written as a whole number of bytes ("65536") or
// a whole number followed by a unit: B, KiB, MiB, GiB (powers of 1024) or
// KB, MB, GB (powers of 1000), optionally separated by one space ("64KiB",
// "10 MiB", "1MB"). Negative sizes, fractions and values that overflow an
// int64 are refused. The error is an *Error without position or key.
// ParseSize is safe for concurrent use.
func ParseSize(s string) (int64, error) {
	n, msg := parseSize(s)
	if msg != "" {
		return 0, &Error{Msg: msg}
	}
	return n, nil
}

func parseSize(s string) (int64, string) {
	bad := func() (int64, string) { return 0, sizeExample + ", got " + quote(s) }
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return bad()
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, "size " + quote(s) + " is too large"
	}
	unit := s[i:]
	if strings.HasPrefix(unit, ".") {
		return 0, sizeExample + ", got " + quote(s) + ": use a whole number, in a smaller unit if needed"
	}
	if strings.HasPrefix(unit, " ") {
		unit = unit[1:]
		if unit == "" {
			return bad()
		}
	}
	if unit == "" {
		return n, ""
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, sizeExample + ", got " + quote(s) + " (units: B, KiB, MiB, GiB, KB, MB, GB)"
	}
	if n > math.MaxInt64/mult {
		return 0, "size " + quote(s) + " is too large"
	}
	return n * mult, ""
}

// formatSize renders n with the largest binary unit that divides it, for
// messages and summaries ("64KiB", "1000B").
func formatSize(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

const durationExample = `expected a duration such as "10s" or "1m30s"`

// parseDuration parses Go duration syntax ("10s", "1h30m", "250ms").
func parseDuration(s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, durationExample + ", got " + quote(s)
	}
	return d, ""
}

// NormalizeHost validates a route's host pattern and returns its normal
// form: lower case, without a port and without a trailing dot. A pattern is
// a host name ("example.com"), an IP address ("127.0.0.1", "[::1]") or a
// wildcard "*.example.com", where the "*" stands for one or more labels
// and may appear only as the whole leftmost label. Names must be ASCII
// (write internationalised names in their "xn--" form). The error is an
// *Error without position or key. NormalizeHost is safe for concurrent use.
func NormalizeHost(pattern string) (string, error) {
	h, msg := normalizeHost(pattern)
	if msg != "" {
		return "", &Error{Msg: msg}
	}
	return h, nil
}

func normalizeHost(s string) (string, string) {
	bad := func(why string) (string, string) {
		return "", `expected a host such as "example.com" or "*.example.com", got ` + quote(s) + ": " + why
	}
	if s == "" {
		return bad("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return bad(`non-ASCII name; write it in its IDNA ("xn--") form`)
		}
	}
	h := strings.ToLower(s)
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return bad(`missing "]"`)
		}
		if rest := h[end+1:]; rest != "" {
			if msg := checkPort(rest); msg != "" {
				return bad(msg)
			}
		}
		ip, err := netip.ParseAddr(h[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad("not an IPv6 address")
		}
		return h[:end+1], ""
	}
	if c := strings.Count(h, ":"); c > 1 {
		return bad(`write IPv6 addresses in brackets, e.g. "[::1]"`)
	} else if c == 1 {
		i := strings.IndexByte(h, ':')
		if msg := checkPort(h[i:]); msg != "" {
			return bad(msg)
		}
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	name := h
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		name = rest
	}
	if strings.Contains(name, "*") {
		return bad(`only a leading "*." wildcard is allowed; leave host out to match any host`)
	}
	if msg := checkHostName(name); msg != "" {
		return bad(msg)
	}
	return h, ""
}

// checkPort checks a ":port" suffix of a host.
func checkPort(p string) string {
	if len(p) < 2 || p[0] != ':' {
		return "unexpected text after the host"
	}
	if n, err := strconv.ParseUint(p[1:], 10, 16); err != nil || p[1] == '+' || n > 65535 {
		return "bad port " + quote(p[1:])
	}
	return ""
}

// checkHostName checks a dot-separated host name (lower case, no port, no
// trailing dot): labels of letters, digits, '-' and '_', 1 to 63 bytes,
// not starting or ending with '-', 253 bytes in all.
func checkHostName(h string) string {
	if h == "" {
		return "empty name"
	}
	if len(h) > 253 {
		return "longer than 253 bytes"
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" {
			return "empty label"
		}
		if len(label) > 63 {
			return "label longer than 63 bytes"
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "label starts or ends with '-'"
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if c >= 0x80 {
				return `non-ASCII name; write it in its IDNA ("xn--") form`
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("character %q not allowed in a host name", c)
			}
		}
	}
	return ""
}

const addressExample = `expected an address such as "127.0.0.1:8080", "[::1]:8080" or ":8080"`

// checkAddress validates a listen address "host:port": the host may be
// empty (all interfaces), an IP address (IPv6 in brackets) or a host name;
// the port is a number from 0 to 65535 (0 = any free port).
func checkAddress(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			return addressExample + ", got " + quote(s) + ": write IPv6 addresses in brackets"
		}
		return addressExample + ", got " + quote(s)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port[0] == '+' || n > 65535 {
		return addressExample + ", got " + quote(s) + ": the port must be a number from 0 to 65535"
	}
	if host == "" {
		return ""
	}
	if strings.HasPrefix(s, "[") {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() {
			return addressExample + ", got " + quote(s) + ": bad IPv6 address"
		}
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	if strings.Contains(host, ":") {
		return addressExample + ", got " + quote(s) + ": bad IPv6 address"
	}
	if msg := checkHostName(strings.ToLower(host)); msg != "" {
		return addressExample + ", got " + quote(s) + ": " + msg
	}
	return ""
}

// checkRoutePath validates a route's path prefix: it starts with "/", has
// no empty, "." or ".." segments (requests are matched after cleaning, so
// such a prefix could never match), and holds no whitespace, control
// characters, '?' or '#'.
func checkRoutePath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return `expected a path starting with "/", got ` + quote(p)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '?' || c == '#' {
			return fmt.Sprintf("path %s contains %q; a route path is a plain prefix without spaces, query or fragment", quote(p), c)
		}
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "." || seg == ".." || seg == "" && !last {
			return "path " + quote(p) + ` is not clean (no "//", "." or ".." segments); requests are matched after cleaning, so it would never match`
		}
	}
	return ""
}

// checkRedirectTarget validates redirect.to: an absolute path ("/new/") or
// an absolute http(s) URL with a host.
func checkRedirectTarget(s string) string {
	bad := `expected an absolute path such as "/new/" or a URL such as "https://example.com/new/", got ` + quote(s)
	if s == "" {
		return bad
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return bad + " (spaces and control characters must be percent-encoded)"
		}
	}
	if strings.HasPrefix(s, "/") {
		if strings.HasPrefix(s, "//") || strings.HasPrefix(s, `/\`) {
			return bad + ` (a path must not start with "//")`
		}
		if _, err := url.Parse(s); err != nil {
			return bad
		}
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return bad
	}
	return ""
}

// isTchar reports whether c is a token character (RFC 9110, section 5.6.2):
//
//	tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
//	        "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHeaderName validates a header field name (a non-empty token).
func checkHeaderName(name string) string {
	if name == "" {
		return "expected a header name, got an empty string"
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return "expected a header name (ASCII letters, digits and !#$%&'*+-.^_`|~), got " + quote(name) + ": non-ASCII characters are not allowed"
		}
		if !isTchar(name[i]) {
			return fmt.Sprintf("expected a header name (letters, digits and !#$%%&'*+-.^_`|~), got %s: %q is not allowed", quote(name), name[i])
		}
	}
	return ""
}

// checkHeaderValue validates a header field value (RFC 9110, section 5.5):
// visible characters, spaces and tabs, no leading or trailing whitespace,
// and never CR, LF or NUL.
func checkHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\r' || c == '\n':
			return "header values must not contain CR or LF, got " + quote(v)
		case c == 0:
			return "header values must not contain NUL, got " + quote(v)
		case c < ' ' && c != '\t' || c == 0x7f:
			return fmt.Sprintf("header values must not contain control characters, got %s (%q)", quote(v), c)
		}
	}
	if v != strings.TrimSpace(v) {
		return "header values must not start or end with whitespace, got " + quote(v)
	}
	return ""
}

// checkMediaType validates a media type "type/subtype" with optional
// parameters ("text/plain; charset=utf-8").
func checkMediaType(v string) string {
	bad := `expected a media type such as "text/plain" or "application/manifest+json", got ` + quote(v)
	if msg := checkHeaderValue(v); msg != "" {
		return bad
	}
	mt, _, err := mime.ParseMediaType(v)
	if err != nil || strings.HasSuffix(v, ";") {
		return bad
	}
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok || typ == "" || sub == "" || checkHeaderName(typ) != "" || checkHeaderName(sub) != "" {
		return bad
	}
	return ""
}

// quote renders a user value for a message: Go-quoted (so control
// characters are visible) and cut short when long.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
