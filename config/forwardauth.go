package config

import (
	"net/textproto"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ForwardAuth is a route's forward_auth section: each request is first
// asked about, with a GET of URI, to an authentication service (nginx's
// auth_request, Caddy's forward_auth, Traefik's ForwardAuth).
type ForwardAuth struct {
	To             []Upstream    // the authentication service: at least one address, as proxy.to
	URI            string        // the path and query asked for, default "/"
	CopyHeaders    []string      // canonical names of the answer's fields copied onto the request when it passes; removed from the client's request always
	TrustForwarded bool          // default false: keep the X-Forwarded-* fields of a client that is one of server.trusted_proxies, instead of gale's own
	Timeout        time.Duration // default 5s: no answer within it is 504
	Protocol       string        // "http1" (default) or "h2c", as proxy.protocol
}

// defaultForwardAuthTimeout is forward_auth.timeout's default.
const defaultForwardAuthTimeout = 5 * time.Second

var forwardAuthKeys = sectionKey("forward_auth", "Ask an authentication service about each request before the route serves it (nginx auth_request, Caddy forward_auth): a GET of uri carrying the original method, URI, host, protocol and client in X-Forwarded-* and X-Original-* fields (gale's own), and the client's other fields but the hop-by-hop ones, the framing of its body, Expect and forwarding fields. A 2xx answer lets the request through with copy_headers copied onto it; any other answer (a 401, a 302 to a login page) goes to the client as it came; no answer is 502, or 504 past the timeout.",
	oneOrList("to", &keySpec{typ: typeString, doc: `"host:port", "unix:/path", "http://host:port" (not https), "dns+a://name:port" or "dns+srv://_service._proto.name" (resolved with the defaults of proxy.resolve)`}, "The authentication service's addresses, no two alike.").must(),
	&keySpec{name: "uri", typ: typeString, def: "/", doc: `The path and query asked for, e.g. "/api/verify?rd=https://auth.example.com/".`},
	listKey("copy_headers", &keySpec{typ: typeString, pattern: headerNamePattern, doc: "A header name, e.g. X-User."}, "Fields of a 2xx answer copied onto the request (e.g. Remote-User, X-User); always removed from the client's own request first, so a client cannot send them.").distinct(),
	boolKey("trust_forwarded", "false", "Pass on the X-Forwarded-* and other forwarding fields (X-Real-IP, Forwarded, ...) a client among server.trusted_proxies sent (X-Forwarded-For appended to) instead of gale's own view of the request."),
	durationKey("timeout", "5s", "The whole exchange with the authentication service; past it the request is answered 504."),
	enumKey("protocol", forwardAuthProtocolOptions, "http1", "What the authentication service speaks: HTTP/1.1, or HTTP/2 over cleartext with prior knowledge (h2c), as proxy.protocol."),
)

// forwardAuthProtocolOptions are forward_auth.protocol's values.
var forwardAuthProtocolOptions = []string{"http1", "h2c"}

// forwardAuth decodes a route's forward_auth section.
func (d *decoder) forwardAuth(n *yaml.Node, path string) *ForwardAuth {
	s := d.section(n, path, forwardAuthKeys.names()...)
	if s == nil {
		return nil
	}
	fa := &ForwardAuth{URI: "/", Timeout: defaultForwardAuthTimeout, Protocol: "http1"}
	if v := s.get("to"); v != nil {
		fa.To = d.upstreams(v, join(path, "to"))
		d.plainOnly(v, join(path, "to"), fa.To)
	} else if s.missing("to") {
		d.errorf(s.node, join(path, "to"), `missing required key; e.g. to: "127.0.0.1:9091"`)
	}
	if v := s.get("uri"); v != nil {
		if u, ok := d.checkedStr(v, join(path, "uri"), checkAuthURI); ok {
			fa.URI = u
		}
	}
	if v := s.get("copy_headers"); v != nil {
		fa.CopyHeaders = d.copyHeaders(v, join(path, "copy_headers"))
	}
	d.setBool(s, "trust_forwarded", &fa.TrustForwarded)
	d.setDuration(s, "timeout", &fa.Timeout)
	d.setEnum(s, "protocol", &fa.Protocol, forwardAuthProtocolOptions...)
	return fa
}

// copyHeaders decodes forward_auth.copy_headers: distinct header names,
// canonicalised, none of those that frame a message or the connection.
func (d *decoder) copyHeaders(n *yaml.Node, path string) []string {
	items, _ := d.list(n, path, "header names")
	out := []string{}
	for i, item := range items {
		ip := index(path, i)
		name, ok := d.checkedStr(item, ip, checkHeaderName)
		if !ok {
			continue
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch {
		case slices.Contains(managedHeaders, canon) || canon == "Host":
			d.errorf(deref(item), ip, "%s frames the request and cannot be copied from the authentication service's answer", quote(name))
		case slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, canon) }):
			d.errorf(deref(item), ip, "header %s is listed twice", quote(name))
		default:
			out = append(out, canon)
		}
	}
	return out
}

// checkAuthURI validates forward_auth.uri: an origin-form target, as
// health_check.path is.
func checkAuthURI(p string) string {
	if msg := checkHealthPath(p); msg != "" {
		return strings.Replace(msg, `"/healthz"`, `"/api/verify"`, 1)
	}
	return ""
}

// AuthProxy returns the settings of fa's authentication service as the
// upstreams of a proxy route: the proxy's defaults (passive health,
// pools of keep-alive connections, one retry of a connection that
// failed), with the connect and response-header timeouts bounded by
// fa.Timeout.
func AuthProxy(fa *ForwardAuth) *Proxy {
	p := defaultProxy()
	p.To = fa.To
	p.Protocol = fa.Protocol
	p.Timeouts.Connect = min(p.Timeouts.Connect, fa.Timeout)
	p.Timeouts.ResponseHeader = fa.Timeout
	return p
}

// plainOnly refuses https:// among an authentication service's addresses:
// the subrequest has no tls section to say what the service's
// certificate is verified against.
func (d *decoder) plainOnly(n *yaml.Node, path string, ups []Upstream) {
	for i, u := range ups {
		if !u.TLS {
			continue
		}
		at := n
		if n.Kind == yaml.SequenceNode && i < len(n.Content) {
			at = n.Content[i]
		}
		d.errorf(at, path, "%q: an authentication service over https is not supported yet; use http://, host:port or unix:/path", u.Raw)
	}
}
