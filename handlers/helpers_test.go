package handlers

import (
	"os"
	"strings"
	"testing"

	"gale/codec"
	"gale/config"
)

// request builds a parsed request head by hand, the way codec.Parse
// leaves it: target split into path and query.
func request(method, host, target string, headers ...string) *codec.Request {
	r := &codec.Request{
		Method:        []byte(method),
		Target:        []byte(target),
		Version:       codec.HTTP11,
		ContentLength: -1,
		KeepAlive:     true,
	}
	path := target
	if i := strings.IndexByte(target, '?'); i >= 0 {
		path = target[:i]
		r.Query = []byte(target[i+1:])
	}
	r.Path = []byte(path)
	if host != "" {
		r.Host = []byte(host)
		r.Headers = append(r.Headers, codec.Header{Name: []byte("Host"), Value: []byte(host)})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, codec.Header{Name: []byte(headers[i]), Value: []byte(headers[i+1])})
	}
	return r
}

func newCtx(req *codec.Request) *Ctx {
	return &Ctx{Req: req, Scratch: make([]byte, 0, 4096), Resp: Response{Headers: make([]codec.Header, 0, 16)}}
}

// serve routes one request through rt and returns the context.
func serve(t *testing.T, rt *Router, req *codec.Request) *Ctx {
	t.Helper()
	c := newCtx(req)
	rt.Serve(c)
	if c.Resp.Status == 0 {
		t.Fatalf("%s %s: status 0", req.Method, req.Target)
	}
	t.Cleanup(func() {
		if c.Resp.File != nil {
			c.Resp.File.Close()
		}
	})
	return c
}

func mustBuild(t testing.TB, cfg *config.Config, opts ...Option) *Router {
	t.Helper()
	rt, err := Build(cfg, opts...)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// respondRoute is a route answering with its own name as the body.
func respondRoute(host, path, name string) config.Route {
	return config.Route{Host: host, Path: path, Respond: &config.Respond{Status: 200, Body: name}}
}

func header(r *Response, name string) string {
	return string(r.Get([]byte(name)))
}

func headerCount(hs []codec.Header, name string) int {
	n := 0
	for _, h := range hs {
		if strings.EqualFold(string(h.Name), name) {
			n++
		}
	}
	return n
}

func writeFile(name, body string) error { return os.WriteFile(name, []byte(body), 0o644) }
