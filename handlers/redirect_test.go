package handlers

import (
	"testing"

	"gale/config"
)

func TestRedirect(t *testing.T) {
	tests := []struct {
		name     string
		route    string // route path
		conf     config.Redirect
		target   string
		status   int
		location string
	}{
		{"plain", "/old/", config.Redirect{To: "https://example.com/new/", Status: 301}, "/old/a/b?x=1", 301, "https://example.com/new/"},
		{"default status", "/old/", config.Redirect{To: "/new/"}, "/old/a", 308, "/new/"},
		{"keep path", "/old/", config.Redirect{To: "https://example.com/new/", Status: 308, KeepPath: true}, "/old/a/b?x=1&y", 308, "https://example.com/new/a/b?x=1&y"},
		{"keep path, base without slash", "/old/", config.Redirect{To: "https://example.com/new", Status: 302, KeepPath: true}, "/old/a", 302, "https://example.com/new/a"},
		{"keep path, prefix without slash", "/old", config.Redirect{To: "/new", Status: 307, KeepPath: true}, "/old/a.html", 307, "/new/a.html"},
		{"keep path, exact match", "/old", config.Redirect{To: "/new", Status: 307, KeepPath: true}, "/old", 307, "/new"},
		{"keep path, exact subtree", "/old/", config.Redirect{To: "/new/", Status: 307, KeepPath: true}, "/old/?q", 307, "/new/?q"},
		{"keep path, empty query", "/old/", config.Redirect{To: "/new/", Status: 307, KeepPath: true}, "/old/x?", 307, "/new/x"},
		{"keep path, both queries", "/", config.Redirect{To: "https://example.com/?src=old#top", Status: 303, KeepPath: true}, "/p?x=1", 303, "https://example.com/p?src=old&x=1#top"},
		{"target query kept", "/", config.Redirect{To: "/login?next=home", Status: 302}, "/p?x=1", 302, "/login?next=home"},
		// The request must not make Location a network-path reference.
		{"double slash", "/", config.Redirect{To: "/", Status: 301, KeepPath: true}, "//evil.example/x", 301, "/evil.example/x"},
		{"many slashes", "/old/", config.Redirect{To: "https://example.com", Status: 301, KeepPath: true}, "/old///evil.example", 301, "https://example.com/evil.example"},
		// A backslash (read as "/" by browsers) is refused before routing.
		{"backslash", "/", config.Redirect{To: "/", Status: 301, KeepPath: true}, "/\\evil.example", 400, ""},
		{"mixed slashes", "/old/", config.Redirect{To: "https://example.com", Status: 301, KeepPath: true}, "/old//\\/evil.example", 400, ""},
		{"controls encoded", "/", config.Redirect{To: "/n/", Status: 301, KeepPath: true}, "/a b\r\nX: y\"<>#", 301, "/n/a%20b%0D%0AX:%20y%22%3C%3E%23"},
		{"keep path normalised", "/old/", config.Redirect{To: "/new/", Status: 301, KeepPath: true}, "/old/a/./%62/../c//%7ed", 301, "/new/a/c/~d"},
		{"non-ASCII encoded", "/", config.Redirect{To: "/n/", Status: 301, KeepPath: true}, "/caf\xc3\xa9?q=\xff", 301, "/n/caf%C3%A9?q=%FF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf
			rt := mustBuild(t, &config.Config{Routes: []config.Route{{Path: tt.route, Redirect: &conf}}})
			c := serve(t, rt, request("GET", "example.com", tt.target))
			if c.Resp.Status != tt.status {
				t.Errorf("status %d; want %d", c.Resp.Status, tt.status)
			}
			if got := header(&c.Resp, "Location"); got != tt.location {
				t.Errorf("Location %q; want %q", got, tt.location)
			}
			if len(c.Resp.Body) == 0 || len(c.Resp.Body) > 32 || header(&c.Resp, "Content-Type") == "" {
				t.Errorf("body %q type %q; want a short body with its type", c.Resp.Body, header(&c.Resp, "Content-Type"))
			}
		})
	}
}

// Location lives in Scratch above what was there before the handler ran.
func TestRedirectKeepsEarlierScratch(t *testing.T) {
	rt := mustBuild(t, &config.Config{Routes: []config.Route{{Path: "/", Redirect: &config.Redirect{To: "/n/", Status: 301, KeepPath: true}}}})
	c := newCtx(request("GET", "", "/abc"))
	c.Scratch = append(c.Scratch, "keep"...)
	rt.Serve(c)
	if string(c.Scratch[:4]) != "keep" || header(&c.Resp, "Location") != "/n/abc" {
		t.Errorf("scratch %q location %q", c.Scratch, header(&c.Resp, "Location"))
	}
}
