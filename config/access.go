package config

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// AccessRule is one entry of a route's access list: the client address
// (see handlers.ClientAddr) in one of Prefixes allows or denies the
// request. The first rule that matches decides; a request no rule matches
// is denied (403).
type AccessRule struct {
	Allow      bool           // true: allow; false: deny
	Prefixes   []netip.Prefix // masked; "all" is 0.0.0.0/0 and ::/0
	ClientCert *CertMatch     // nil = any client; else the rule matches only a client whose TLS certificate verified and matches
	Pos        Pos            // where the rule is written
}

// CertMatch is an access rule's client_cert: the client presented a TLS
// certificate that verified against its listener's client_auth CA
// (SSL_CLIENT_VERIFY SUCCESS) and, for each list that is not empty, that
// matches one of its entries.
type CertMatch struct {
	Names        []string // the subject's common name or a subject alternative name (DNS, email, URI, IP) is one of these
	Fingerprints []string // the SHA-256 fingerprint of the certificate is one of these (lower-case hex, no colons)
}

// RateLimit limits a route's requests per key with the generic cell rate
// algorithm: Burst+1 requests at once, then one per Interval; a request
// over the limit is answered 429 with Retry-After, never delayed (nginx's
// limit_req with burst and nodelay).
type RateLimit struct {
	Rate       string        // as written, e.g. "10/s"
	Interval   time.Duration // the time one request costs: the rate's period over its count; positive
	Burst      int           // default 0, 0..1000000: requests allowed beyond the rate at once
	Header     string        // "" (default): keyed by the client address; else (canonical) keyed by this header's value, and by the address for a request without it
	IPv6Prefix int           // default 64, 1..128: IPv6 client addresses are keyed by this prefix
	MaxKeys    int           // default 65536, 1024..16777216: keys remembered at once; the table's memory is fixed by it
	Scope      string        // "local" (default) or "cluster": shared by every instance through cluster.redis
	OnFailure  string        // on_store_failure, with scope cluster: "local" (default), "allow" or "deny"
	Pos        Pos           // where rate_limit was given, for messages
}

// Rate limit bounds and defaults.
const (
	defaultRateKeys   = 1 << 16
	minRateKeys       = 1 << 10
	maxRateKeys       = 1 << 24
	maxRateBurst      = 1_000_000
	defaultIPv6Prefix = 64
)

// Rewrite is a route's internal rewrite of the request's path and query,
// applied after the route was chosen and before its handler runs.
type Rewrite struct {
	Raw   string    // as written
	Path  Template  // the new path; normalised after expansion, as a request path is
	Query *Template // the new query (after "?"); nil = keep the request's query
}

// access decodes a route's access list.
func (d *decoder) access(n *yaml.Node, path string) []AccessRule {
	items, ok := d.nonEmptyList(n, path, "rules such as {allow: 10.0.0.0/8} or {deny: all}", "expected at least one rule, e.g. [{allow: 10.0.0.0/8}, {deny: all}]")
	if !ok {
		return nil
	}
	var out []AccessRule
	for i, item := range items {
		ip := index(path, i)
		s := d.section(item, ip, accessRuleKeys.names()...)
		if s == nil {
			continue
		}
		allow, deny := s.get("allow"), s.get("deny")
		if (allow == nil) == (deny == nil) {
			d.errorf(s.node, ip, "expected exactly one of allow, deny in each rule, e.g. {allow: 10.0.0.0/8}")
			continue
		}
		r := AccessRule{Allow: allow != nil, Pos: Pos{item.Line, item.Column}}
		v, key := allow, "allow"
		if deny != nil {
			v, key = deny, "deny"
		}
		if vn := deref(v); vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!str" && vn.Value == "all" {
			r.Prefixes = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
		} else if vn.Kind == yaml.SequenceNode {
			r.Prefixes = d.prefixes(v, join(ip, key))
			if len(vn.Content) == 0 {
				d.errorf(vn, join(ip, key), `expected at least one CIDR, or "all"`)
			}
		} else {
			r.Prefixes = d.prefixes(&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{v}, Line: vn.Line, Column: vn.Column}, join(ip, key))
		}
		if cv := s.get("client_cert"); cv != nil {
			if r.ClientCert = d.certMatch(cv, join(ip, "client_cert")); r.ClientCert == nil {
				continue
			}
		}
		if len(r.Prefixes) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// rateLimit decodes a route's rate_limit.
func (d *decoder) rateLimit(n *yaml.Node, path string) *RateLimit {
	rl := &RateLimit{IPv6Prefix: defaultIPv6Prefix, MaxKeys: defaultRateKeys, Scope: "local", OnFailure: "local"}
	s := d.section(n, path, rateLimitKeys.names()...)
	if s == nil {
		return nil
	}
	rl.Pos = Pos{s.node.Line, s.node.Column}
	d.setEnum(s, "scope", &rl.Scope, rateScopeOptions...)
	if rl.Scope == "cluster" {
		d.clusterScopes = append(d.clusterScopes, keyRef{deref(s.get("scope")), join(path, "scope")})
	}
	d.setEnum(s, "on_store_failure", &rl.OnFailure, storeFailureOptions...)
	if v := s.get("rate"); v != nil {
		p := join(path, "rate")
		if r, ok := d.str(v, p); ok {
			if iv, msg := parseRate(r); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
			} else {
				rl.Rate, rl.Interval = r, iv
			}
		}
	} else if s.missing("rate") {
		d.errorf(s.node, join(path, "rate"), `missing required key; e.g. rate: 10/s`)
	}
	if v := s.get("burst"); v != nil {
		if b, ok := d.integer(v, join(path, "burst"), 0, maxRateBurst); ok {
			rl.Burst = int(b)
		}
	}
	if v := s.get("header"); v != nil {
		if h, ok := d.checkedStr(v, join(path, "header"), checkHeaderName); ok {
			rl.Header = textproto.CanonicalMIMEHeaderKey(h)
		}
	}
	if v := s.get("ipv6_prefix"); v != nil {
		if b, ok := d.integer(v, join(path, "ipv6_prefix"), 1, 128); ok {
			rl.IPv6Prefix = int(b)
		}
	}
	d.setCount(s, "max_keys", &rl.MaxKeys, minRateKeys, maxRateKeys)
	return rl
}

// parseRate parses "N/s", "N/m" or "N/h" (N a whole number, at least 1)
// into the time one request costs.
func parseRate(s string) (time.Duration, string) {
	bad := `expected a rate such as "10/s", "600/m" or "1000/h", got ` + quote(s)
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, bad
	}
	var per time.Duration
	switch strings.TrimSpace(unit) {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		return 0, bad
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 1 {
		return 0, bad
	}
	if int64(per)/n < int64(time.Microsecond) {
		return 0, fmt.Sprintf("rate %s is more than a million requests a second; a limit that high limits nothing", quote(s))
	}
	return time.Duration(int64(per) / n), ""
}

// rewrite decodes a route's rewrite: a URI template "/path?query".
func (d *decoder) rewrite(n *yaml.Node, path string, m *Match) *Rewrite {
	raw, ok := d.str(n, path)
	if !ok {
		return nil
	}
	rw, msg := ParseRewrite(raw, m)
	if msg != "" {
		d.errorf(deref(n), path, "%s", msg)
		return nil
	}
	return rw
}

// ParseRewrite parses a rewrite template: a path template, optionally
// followed by "?" and a query template. The path must start with "/" or
// with {path} or {rest} (which do). The message is "" on success.
func ParseRewrite(raw string, m *Match) (*Rewrite, string) {
	if msg := checkTemplateBytes(raw, false); msg != "" {
		return nil, msg
	}
	groups, names := m.Groups()
	ps, qs, hasQuery := strings.Cut(raw, "?")
	pt, msg := ParseTemplate(ps, groups, names)
	if msg != "" {
		return nil, msg
	}
	if !startsWithPath(pt) {
		return nil, `expected a path starting with "/" (or {path} or {rest}), such as "/index.php?{query}", got ` + quote(raw)
	}
	rw := &Rewrite{Raw: raw, Path: pt}
	if hasQuery {
		qt, msg := ParseTemplate(qs, groups, names)
		if msg != "" {
			return nil, msg
		}
		rw.Query = &qt
	}
	return rw, ""
}

// startsWithPath reports whether a path template's expansion starts with
// "/" whatever the request.
func startsWithPath(t Template) bool {
	if len(t.Parts) == 0 {
		return false
	}
	switch p := t.Parts[0]; p.Var {
	case VarLiteral:
		return p.Lit[0] == '/'
	case VarPath, VarRest:
		return true
	}
	return false
}

// tryFiles decodes static.try_files: path templates tried in order; the
// last one may be "=CODE" (an error status, 400..599).
func (d *decoder) tryFiles(n *yaml.Node, path string, m *Match) ([]Template, int) {
	items, ok := d.list(n, path, "paths")
	if !ok {
		return nil, 0
	}
	if len(items) < 2 {
		d.errorf(deref(n), path, `expected at least two entries (candidates, then the fallback), e.g. ["{path}", "{path}/", /index.html]`)
		return nil, 0
	}
	groups, names := m.Groups()
	var out []Template
	status := 0
	for i, item := range items {
		ip := index(path, i)
		s, ok := d.str(item, ip)
		if !ok {
			continue
		}
		if i == len(items)-1 && strings.HasPrefix(s, "=") {
			code, err := strconv.Atoi(s[1:])
			if err != nil || code < 400 || code > 599 {
				d.errorf(item, ip, `expected a fallback status such as "=404" (400 to 599), got %s`, quote(s))
				continue
			}
			status = code
			continue
		}
		if msg := checkTemplateBytes(s, false); msg != "" {
			d.errorf(item, ip, "%s", msg)
			continue
		}
		if strings.Contains(s, "?") {
			d.errorf(item, ip, `expected a path under the root, got %s; try_files has no query (use the route's rewrite)`, quote(s))
			continue
		}
		t, msg := ParseTemplate(s, groups, names)
		if msg == "" && !startsWithPath(t) {
			msg = `expected a path starting with "/" (or {path} or {rest}), such as "/index.html", got ` + quote(s)
		}
		if msg != "" {
			d.errorf(item, ip, "%s", msg)
			continue
		}
		out = append(out, t)
	}
	return out, status
}

// certMatch decodes an access rule's client_cert: "verified", or a
// mapping of names and fingerprints.
func (d *decoder) certMatch(n *yaml.Node, path string) *CertMatch {
	const eg = `expected "verified" or a mapping such as {names: [admin.example.com], fingerprints: [<SHA-256 hex>]}`
	vn := deref(n)
	if vn.Kind == yaml.ScalarNode {
		if vn.ShortTag() == "!!str" && vn.Value == "verified" {
			return &CertMatch{}
		}
		d.errorf(vn, path, "%s, got %s", eg, quote(vn.Value))
		return nil
	}
	s := d.section(n, path, certMatchKeys.names()...)
	if s == nil {
		return nil
	}
	m := &CertMatch{}
	ok := true
	if v := s.get("names"); v != nil {
		m.Names, ok = d.strOrList(v, join(path, "names"), func(string) string { return "" })
	}
	if v := s.get("fingerprints"); v != nil {
		var good bool
		m.Fingerprints, good = d.strOrList(v, join(path, "fingerprints"), checkFingerprint)
		ok = ok && good
		for i, f := range m.Fingerprints {
			m.Fingerprints[i] = normalFingerprint(f)
		}
	}
	if !ok {
		return nil
	}
	return m
}

// strOrList decodes one non-empty string or a non-empty list of them,
// each checked by check (a message, "" when good).
func (d *decoder) strOrList(n *yaml.Node, path string, check func(string) string) ([]string, bool) {
	vn := deref(n)
	items := []*yaml.Node{n}
	if vn.Kind == yaml.SequenceNode {
		items = vn.Content
		if len(items) == 0 {
			d.errorf(vn, path, "expected at least one value")
			return nil, false
		}
	}
	var out []string
	ok := true
	for i, it := range items {
		p := path
		if vn.Kind == yaml.SequenceNode {
			p = index(path, i)
		}
		v, good := d.str(it, p)
		if good && v == "" {
			d.errorf(deref(it), p, "expected a value, got an empty string")
			good = false
		}
		if good {
			if msg := check(v); msg != "" {
				d.errorf(deref(it), p, "%s", msg)
				good = false
			}
		}
		ok = ok && good
		out = append(out, v)
	}
	return out, ok
}

// normalFingerprint is a SHA-256 fingerprint as lower-case hex without
// colons, the form clientcert.Info holds.
func normalFingerprint(f string) string {
	return strings.ToLower(strings.ReplaceAll(f, ":", ""))
}

// checkFingerprint accepts 64 hexadecimal digits, optionally in pairs
// separated by colons (as openssl x509 -fingerprint -sha256 prints them).
func checkFingerprint(f string) string {
	h := normalFingerprint(f)
	paired := len(f) == 95
	for i := 2; paired && i < len(f); i += 3 {
		paired = f[i] == ':'
	}
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" || (len(f) != 64 && !paired) {
		return "expected a SHA-256 fingerprint: 64 hexadecimal digits (openssl x509 -noout -fingerprint -sha256), got " + quote(f)
	}
	return ""
}
