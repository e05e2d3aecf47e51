package handlers

import (
	"bytes"
	"strings"
	"testing"

	"gale/config"
)

// FuzzRewrite compiles a path_regex and a rewrite as the config does and
// routes a request through them: never a panic; a rewritten path is in
// normal form (so no capture climbs above "/" or leaves a dot segment),
// and the query holds no byte a request line cannot carry.
func FuzzRewrite(f *testing.F) {
	for _, s := range [][4]string{
		{"/a(.*)b", "/static/{1}/{1}/{1}/passwd", "/a..b", ""},
		{"/users/(?P<id>[0-9]+)", "/api/{id}?{query}&x={path}", "/users/42", "a=1"},
		{"(/.*)", "/{1}{rest}", "//x/./y/%2e%2e/z", "q"},
		{"/(.*)", "{path}/{1}?{0}", "/%41%7e%2F", ""},
		{"", "/x/{path}/..", "/a/b", ""},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, regex, tmpl, path, query string) {
		if len(regex)+len(tmpl)+len(path)+len(query) > 4096 || strings.ContainsAny(query, " #\x7f") || strings.IndexFunc(query, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
			return
		}
		var m config.Match
		if regex != "" {
			re, msg := config.CompileRegex(regex)
			if msg != "" {
				return
			}
			m.PathRegex = re
		}
		rw, msg := config.ParseRewrite(tmpl, &m)
		if msg != "" {
			return
		}
		rt, err := Build(&config.Config{Routes: []config.Route{{Path: "/", Match: m, Rewrite: rw, Respond: &config.Respond{Status: 200}}}})
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		defer rt.Close()
		target := path
		if query != "" {
			target += "?" + query
		}
		c := newCtx(request("GET", "a", target))
		rt.Serve(c)
		if c.Resp.Status != 200 {
			return
		}
		if n, ok := AppendNormalPath(nil, c.Path); !ok || !bytes.Equal(n, c.Path) {
			t.Fatalf("%q with %q: rewritten path %q is not normal", target, tmpl, c.Path)
		}
		if !bytes.HasPrefix(c.Rest, []byte("/")) {
			t.Fatalf("rest %q", c.Rest)
		}
		for _, b := range c.Req.Query {
			if b <= ' ' || b == 0x7f || b == '#' {
				t.Fatalf("%q with %q: query %q", target, tmpl, c.Req.Query)
			}
		}
	})
}
