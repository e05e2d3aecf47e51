package handlers

import (
	"fmt"
	"net/netip"
	"strings"

	"gale/codec"
	"gale/config"
)

// ExplainQuery is a request to explain, as `gale route` and the admin
// API's GET /routes take it.
type ExplainQuery struct {
	Method  string   // the request method
	Target  string   // a path ("/a?b=1") or an absolute URL ("http://example.com/a")
	Headers []string // "Name: value" fields; Host defaults to the URL's host, else localhost
	From    string   // the client address ("127.0.0.2" or "[::1]:5000"); "" = 127.0.0.1
}

// ExplainRequest builds q's request as the server's parser would have
// it, and its client address. The error says why the server would refuse
// the request, or what is wrong with q.
func ExplainRequest(q ExplainQuery) (*codec.Request, netip.AddrPort, error) {
	from := q.From
	if from == "" {
		from = "127.0.0.1"
	}
	remote, err := netip.ParseAddrPort(from)
	if err != nil {
		a, err2 := netip.ParseAddr(from)
		if err2 != nil {
			return nil, remote, fmt.Errorf("--from %q: expected an address such as 127.0.0.2 or [::1]:5000", from)
		}
		remote = netip.AddrPortFrom(a, 0)
	}
	target, host := q.Target, ""
	if rest, ok := strings.CutPrefix(target, "http://"); ok {
		host, target, _ = strings.Cut(rest, "/")
		target = "/" + target
	} else if rest, ok := strings.CutPrefix(target, "https://"); ok {
		host, target, _ = strings.Cut(rest, "/")
		target = "/" + target
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", q.Method, target)
	hasHost := false
	for _, h := range q.Headers {
		name, _, ok := strings.Cut(h, ":")
		if !ok {
			return nil, remote, fmt.Errorf("-H %q: expected 'Name: value'", h)
		}
		hasHost = hasHost || strings.EqualFold(strings.TrimSpace(name), "host")
		b.WriteString(h + "\r\n")
	}
	if !hasHost {
		if host == "" {
			host = "localhost"
		}
		b.WriteString("Host: " + host + "\r\n")
	}
	b.WriteString("\r\n")
	req := &codec.Request{}
	if _, err := codec.Parse([]byte(b.String()), req, nil); err != nil {
		return nil, remote, fmt.Errorf("the server would refuse this request: %v", err)
	}
	return req, remote, nil
}

// ExplainConfig builds cfg's routes as the server would, with stand-ins
// for the proxy and FastCGI handlers (they forward nothing and start
// nothing), and explains req from remote through them (see
// Router.Explain). The error is cfg's, when its routes cannot be built.
// Safe for concurrent use; it reads files as Explain does.
func ExplainConfig(cfg *config.Config, req *codec.Request, remote netip.AddrPort) ([]string, error) {
	standIn := func(*Route) (Handler, error) {
		return HandlerFunc(func(c *Ctx) { c.Error(502) }), nil
	}
	askNone := func(*Route) (AuthGate, error) { return noAuthGate{}, nil }
	rt, err := Build(cfg, WithProxy(standIn), WithFastCGI(standIn), WithForwardAuth(askNone), WithLimitStore(OfflineLimitStore(cfg.Cluster.Instances)))
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	c := &Ctx{Req: req, Remote: remote, Scratch: make([]byte, 0, 4096)}
	return rt.Explain(c), nil
}

// noAuthGate stands in for a forward_auth service, which an explanation
// never asks.
type noAuthGate struct{}

func (noAuthGate) Ask(*Ctx) AuthCall { return nil }
