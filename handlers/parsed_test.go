package handlers

import (
	"testing"

	"gale/codec"
	"gale/config"
)

// The same requests as bytes through codec.Parse, so the router and the
// static handler see exactly what the app gives them.
func TestServeParsedRequests(t *testing.T) {
	root, _ := staticTree(t)
	rt := mustBuild(t, &config.Config{Routes: []config.Route{
		{Path: "/", Static: &config.Static{Root: root, Index: []string{"index.html"}}},
		{Host: "*.example.com", Path: "/hello", Respond: &config.Respond{Status: 200, Body: "wild"}},
		{Path: "/old/", Redirect: &config.Redirect{To: "/new/", Status: 308, KeepPath: true}},
	}})
	tests := []struct {
		raw      string
		status   int
		location string
		body     string
	}{
		{"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n", 200, "", "alpha"},
		{"HEAD /dir/ HTTP/1.1\r\nHost: x\r\n\r\n", 200, "", "dir index"},
		{"GET /dir?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", 301, "/dir/?x=1", ""},
		{"GET http://www.example.com/hello HTTP/1.1\r\nHost: www.example.com\r\n\r\n", 200, "", "wild"},
		{"GET http://x HTTP/1.1\r\nHost: x\r\n\r\n", 200, "", "<h1>home</h1>"},
		{"GET /hello HTTP/1.1\r\nHost: WWW.EXAMPLE.COM.:8080\r\n\r\n", 200, "", "wild"},
		{"GET /old/p?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", 308, "/new/p?q=1", ""},
		{"GET /../outside/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"GET /%2e%2e/outside/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"GET /%2e%2e%2foutside%2fsecret.txt HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"GET /a.txt%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"GET /%252e%252e/outside/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n", 404, "", ""},
		{"GET /.env HTTP/1.1\r\nHost: x\r\n\r\n", 404, "", ""},
		{"GET /link-out HTTP/1.1\r\nHost: x\r\n\r\n", 404, "", ""},
		{"DELETE /a.txt HTTP/1.1\r\nHost: x\r\n\r\n", 405, "", ""},
	}
	var req codec.Request
	c := newCtx(&req)
	for _, tt := range tests {
		req.Reset()
		if _, err := codec.Parse([]byte(tt.raw), &req, &codec.Limits{}); err != nil {
			t.Errorf("%q: Parse: %v", tt.raw, err)
			continue
		}
		c.Scratch = c.Scratch[:0]
		rt.Serve(c)
		if c.Resp.Status != tt.status || header(&c.Resp, "Location") != tt.location {
			t.Errorf("%q: %d Location %q; want %d %q", tt.raw, c.Resp.Status, header(&c.Resp, "Location"), tt.status, tt.location)
		}
		if tt.body != "" {
			if got := fileBody(t, &c.Resp); got != tt.body {
				t.Errorf("%q: body %q; want %q", tt.raw, got, tt.body)
			}
		}
		if c.Resp.File != nil {
			c.Resp.File.Close()
		}
	}
}
