package handlers

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestAppendNormalPath(t *testing.T) {
	tests := []struct {
		in, want string // want "" for refused
		route    string // the routing form, when it is not want
	}{
		{"/", "/", ""},
		{"/a/b", "/a/b", ""},
		{"/a/b/", "/a/b/", ""},
		{"/...", "/...", ""},
		{"/a/.x/..y", "/a/.x/..y", ""},
		// Repeated slashes.
		{"//", "/", ""},
		{"//private/secret.txt", "/private/secret.txt", ""},
		{"/a//b///c/", "/a/b/c/", ""},
		// Dot segments (RFC 3986 section 5.2.4).
		{"/./private/secret.txt", "/private/secret.txt", ""},
		{"/x/../private/secret.txt", "/private/secret.txt", ""},
		{"/a/.", "/a/", ""},
		{"/a/./", "/a/", ""},
		{"/a/..", "/", ""},
		{"/a/b/..", "/a/", ""},
		{"/a/b/../c", "/a/c", ""},
		{"/a//..", "/", ""},
		{"/a/.//b", "/a/b", ""},
		// Escapes of unreserved characters are decoded, others kept with
		// upper-case hex digits.
		{"/%70rivate/secret.txt", "/private/secret.txt", ""},
		{"/%7e%2D%2e%5F%41%7A%30", "/~-._Az0", ""},
		{"/a%20b", "/a%20b", ""},
		{"/%252e%252e", "/%252e%252e", ""},
		{"/a/.%2e/x", "/x", ""},
		{"/a/%2E./x", "/x", ""},
		{"/a/%2e%2e/x", "/x", ""},
		{"/a/%2e/x", "/a/x", ""},
		// Raw bytes the path grammar does not allow are encoded.
		{"/caf\xc3\xa9", "/caf%C3%A9", ""},
		{"/caf%c3%a9", "/caf%C3%A9", ""},
		{"/a\"<>^`{|}b", "/a%22%3C%3E%5E%60%7B%7C%7Db", ""},
		{"/%F0%9F%99%82", "/%F0%9F%99%82", ""},
		// Path parameters and encoded slashes stay in the wire form; the
		// routing form drops the one and decodes the other (issue 29).
		{"/a;b=c/d", "/a;b=c/d", "/a/d"},
		{"/admin;x/secret", "/admin;x/secret", "/admin/secret"},
		{"/admin%3Bx/secret", "/admin%3Bx/secret", "/admin/secret"},
		{"/admin%3bx/secret", "/admin%3Bx/secret", "/admin/secret"},
		{"/a/...;x", "/a/...;x", "/a/..."},
		{"/app/login;jsessionid=0AB1", "/app/login;jsessionid=0AB1", "/app/login"},
		{"/shop/;jsessionid=1", "/shop/;jsessionid=1", "/shop/"},
		{"/;x/admin/", "/;x/admin/", "/admin/"},
		{"/a;x/..", "/", ""},
		{"/a%2fb", "/a%2fb", "/a/b"},
		{"/admin%2Fsecret", "/admin%2Fsecret", "/admin/secret"},
		{"/api/v4/projects/group%2Fsub%2Fproject", "/api/v4/projects/group%2Fsub%2Fproject", "/api/v4/projects/group/sub/project"},
		{"/@scope%2Fname", "/@scope%2Fname", "/@scope/name"},
		{"/admin%252Fx", "/admin%252Fx", ""},
		{"/a%2F%2e%2Eb/c", "/a%2F..b/c", "/a/..b/c"},
		{"/api%2Fv1/x;p=1/y", "/api%2Fv1/x;p=1/y", "/api/v1/x/y"},
		// Refused.
		{"", "", ""},
		{"a", "", ""},
		{"/..", "", ""},
		{"/../a", "", ""},
		{"/a/../..", "", ""},
		{"/%2e%2e", "", ""},
		{"/a/%2e%2e/%2E%2E/b", "", ""},
		{"/a/..;/b", "", ""},
		{"/a/..;x=1/b", "", ""},
		{"/a/.;x/b", "", ""},
		{"/a/..%3B/b", "", ""},
		{"/a/..%3bx", "", ""},
		{"/a/..%2Fb", "", ""},
		{"/a/%2F../b", "", ""},
		{"/a/b%2F.", "", ""},
		{"/a/x%2f%2e%2e%2fy", "", ""},
		{"/%2Fadmin", "", ""},
		{"/admin%2F", "", ""},
		{"/a%2F%2Fb", "", ""},
		{"/a/%2e%2F..", "", ""},
		{"/admin;x%2Fy", "", ""},
		{"/admin%2Fy;x", "", ""},
		{"/a/%2e%2e;x/b", "", ""},
		{"/a/.%3b/b", "", ""},
		{"/a\\b", "", ""},
		{"/a/..\\b", "", ""},
		{"/a%5Cb", "", ""},
		{"/a%5cb", "", ""},
		{"/a%00", "", ""},
		{"/a\x00", "", ""},
		{"/%", "", ""},
		{"/%4", "", ""},
		{"/%zz", "", ""},
		{"/a%2", "", ""},
		{"/%c0%ae", "", ""},
		{"/%c0%ae%c0%ae/x", "", ""},
		{"/%e0%80%ae", "", ""},
		{"/%f0%80%80%ae", "", ""},
		{"/%c1%9c", "", ""},
		{"/%ed%a0%80", "", ""},
		{"/%f4%90%80%80", "", ""},
		{"/%ff", "", ""},
		{"/%e9t%e9", "", ""},
		{"/caf\xe9", "", ""},
		{"/%c3", "", ""},
		{"/%c3/%a9", "", ""},
		{"/%80", "", ""},
	}
	for _, tt := range tests {
		if tt.route == "" {
			tt.route = tt.want
		}
		if ok, route := routingOf(tt.in); tt.want != "" && (!ok || route != tt.route) {
			t.Errorf("%q: routing form %q; want %q", tt.in, route, tt.route)
		}
		got, ok := AppendNormalPath([]byte("x"), []byte(tt.in))
		switch {
		case tt.want == "" && ok:
			t.Errorf("%q: %q; want refused", tt.in, got[1:])
		case tt.want == "":
			if string(got) != "x" {
				t.Errorf("%q refused, but dst became %q", tt.in, got)
			}
		case !ok:
			t.Errorf("%q refused; want %q", tt.in, tt.want)
		case string(got) != "x"+tt.want:
			t.Errorf("%q: %q; want %q", tt.in, got[1:], tt.want)
		}
		if isNormalPath([]byte(tt.in)) && tt.in != tt.want {
			t.Errorf("%q: isNormalPath true; its normal form is %q", tt.in, tt.want)
		}
	}
}

// routingOf returns the routing form of the request path p.
func routingOf(p string) (bool, string) {
	w, ok := AppendNormalPath(nil, []byte(p))
	if !ok {
		return false, ""
	}
	return true, string(AppendRoutingPath(nil, w))
}

// A normal path is the request's own bytes; another is appended to
// Scratch, above what was there, and capped so that appends through it
// cannot overwrite what handlers append next.
func TestNormalizePathAliases(t *testing.T) {
	c := newCtx(request("GET", "", "/a/b/c"))
	c.Scratch = append(c.Scratch, "keep"...)
	if !c.normalizePath() || &c.Path[0] != &c.Req.Path[0] || string(c.Scratch) != "keep" {
		t.Fatalf("normal path %q not aliased (scratch %q)", c.Path, c.Scratch)
	}
	c.Req = request("GET", "", "/a/./b//%63")
	if !c.normalizePath() || string(c.Path) != "/a/b/c" || string(c.Scratch) != "keep/a/b/c" || cap(c.Path) != len(c.Path) {
		t.Fatalf("path %q scratch %q", c.Path, c.Scratch)
	}
	c.Req = request("GET", "", "/../x")
	if c.normalizePath() || c.Path != nil || string(c.Scratch) != "keep/a/b/c" {
		t.Fatalf("climbing path accepted as %q (scratch %q)", c.Path, c.Scratch)
	}
}

// FuzzNormalPath checks the normal form's properties: a path
// isNormalPath accepts is its own normal form; normalising is idempotent;
// the wire form is a valid path with no empty, "." or ".." segment, no
// escape of an unreserved character and only upper-case hex digits but
// in an encoded slash, which keeps the client's case; decoded, it is what
// cleaning the decoded input gives. The routing form is normal, holds no
// path parameter nor encoded slash, and is the wire form with its
// parameters dropped and its encoded slashes decoded. Each
// encoded_slashes mode (keep, reject, decode) gives what it says: the
// wire form, a refusal exactly when there is an encoded slash, or the
// wire form with "/" for each encoded slash, whose routing form is the
// same; and WireOffset maps every segment boundary of the routing form
// to a suffix of the wire form whose routing form is the rest.
//
//	go test -run X -fuzz FuzzNormalPath -fuzztime 3m ./handlers/
func FuzzNormalPath(f *testing.F) {
	for _, s := range []string{
		"/", "/a/b/", "//private/x", "/./a", "/x/../private/s", "/%70rivate", "/a%2fb",
		"/a/..;/b", "/a/.;x", "/a\\b", "/a%5c", "/a%00", "/%", "/%4", "/%zz",
		"/%c0%ae", "/%e0%80%ae", "/.%2e/", "/%2E./", "/caf\xc3\xa9", "/%252e", "/a/b/..",
		"/admin;x/secret", "/admin%3bx/", "/shop/;jsessionid=1", "/;x/admin/", "/admin%2F%2Fx",
		"/api%2Fv1/x;p=1/y", "/a%2Fb/..", "/@scope%2Fname", "/%2Fadmin", "/admin%252F",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 4096 {
			return
		}
		out, ok := AppendNormalPath(nil, []byte(p))
		if isNormalPath([]byte(p)) && (!ok || string(out) != p) {
			t.Fatalf("%q: isNormalPath, but normalised to %q (ok %v)", p, out, ok)
		}
		if !ok {
			if len(out) != 0 {
				t.Fatalf("%q refused with output %q", p, out)
			}
			return
		}
		if len(out) > 3*len(p) {
			t.Fatalf("%q: %d bytes out of %d", p, len(out), len(p))
		}
		again, ok := AppendNormalPath(nil, out)
		if !ok || string(again) != string(out) {
			t.Fatalf("%q: normal form %q normalises to %q (ok %v)", p, out, again, ok)
		}
		checkNormalForm(t, p, string(out))
		dp, err1 := url.PathUnescape(p)
		do, err2 := url.PathUnescape(string(out))
		if err1 == nil && err2 == nil && do != cleanDecoded(dp) {
			t.Fatalf("%q: normal form %q decodes to %q; cleaning the decoded input gives %q", p, out, do, cleanDecoded(dp))
		}
		route := AppendRoutingPath(nil, out)
		checkRoutingForm(t, p, string(out), string(route))
		checkSlashModes(t, p, out, route)
	})
}

// checkRoutingForm fails unless route is a normal path without path
// parameters or encoded slashes, its own routing form, and the wire form
// w with parameters dropped and encoded slashes decoded.
func checkRoutingForm(t *testing.T, in, w, route string) {
	t.Helper()
	checkNormalForm(t, in, route)
	if strings.ContainsAny(route, ";") || strings.Contains(strings.ToUpper(route), "%2F") || strings.Contains(route, "%3B") {
		t.Fatalf("%q: routing form %q holds a parameter or an encoded slash", in, route)
	}
	if again, ok := AppendNormalPath(nil, []byte(route)); !ok || string(again) != route || string(AppendRoutingPath(nil, again)) != route {
		t.Fatalf("%q: routing form %q is not its own", in, route)
	}
	segs := strings.Split(strings.NewReplacer("%2F", "/", "%2f", "/").Replace(w), "/")
	for i, s := range segs {
		if k := strings.IndexAny(s, ";"); k >= 0 {
			s = s[:k]
		}
		if k := strings.Index(s, "%3B"); k >= 0 {
			s = s[:k]
		}
		segs[i] = s
	}
	want := "/" + strings.Join(segs[1:], "/")
	for strings.Contains(want, "//") {
		want = strings.ReplaceAll(want, "//", "/")
	}
	if want != route {
		t.Fatalf("%q: routing form %q; the wire form %q reads %q", in, route, w, want)
	}
}

// checkSlashModes applies each encoded_slashes mode to the wire form w
// and checks WireOffset at every boundary of the routing form.
func checkSlashModes(t *testing.T, in string, w, route []byte) {
	t.Helper()
	slashes := hasEncodedSlash(w)
	for _, mode := range []uint8{slashKeep, slashReject, slashDecode} {
		c := &Ctx{Path: route, WirePath: append([]byte(nil), w...), slashes: slashes}
		r := &Route{slashes: mode}
		ok := !c.slashes || r.encodedSlashes(c)
		switch {
		case mode == slashReject && ok == slashes:
			t.Fatalf("%q: reject mode let %q through: %v", in, w, ok)
		case mode == slashKeep && (!ok || string(c.WirePath) != string(w)):
			t.Fatalf("%q: keep mode forwards %q; want %q", in, c.WirePath, w)
		case mode == slashDecode && slashes:
			fw := c.WirePath
			if fw == nil {
				fw = route
			}
			if !ok || hasEncodedSlash(fw) || string(AppendRoutingPath(nil, fw)) != string(route) {
				t.Fatalf("%q: decode mode forwards %q (routing form %q)", in, fw, AppendRoutingPath(nil, fw))
			}
		}
	}
	for n := 1; n <= len(route); n++ {
		if n < len(route) && route[n-1] != '/' && route[n] != '/' {
			continue // not a boundary a route prefix can end at
		}
		rest := w[WireOffset(w, n):]
		got := AppendRoutingPath(nil, append([]byte("/"), rest...))
		want := "/" + strings.TrimPrefix(string(route[n:]), "/")
		if string(got) != want && !(len(rest) == 0 && want == "/") {
			t.Fatalf("%q: wire %q after routing prefix %q is %q, read %q; want %q", in, w, route[:n], rest, got, want)
		}
	}
}

// checkNormalForm fails unless out has the shape of a normal path.
const hexDigitsUpper = "0123456789ABCDEF"

func checkNormalForm(t *testing.T, in, out string) {
	t.Helper()
	if !strings.HasPrefix(out, "/") || strings.Contains(out, "//") || strings.Contains(out, "/./") ||
		strings.Contains(out, "/../") || strings.HasSuffix(out, "/.") || strings.HasSuffix(out, "/..") {
		t.Fatalf("%q: %q has an empty or dot segment", in, out)
	}
	for i := 0; i < len(out); i++ {
		b := out[i]
		switch {
		case b == '%':
			if i+2 < len(out) && out[i+1:i+3] == "2f" {
				i += 2 // an encoded slash keeps the client's case
				continue
			}
			if i+2 >= len(out) || !strings.ContainsRune(hexDigitsUpper, rune(out[i+1])) || !strings.ContainsRune(hexDigitsUpper, rune(out[i+2])) {
				t.Fatalf("%q: %q has a bad escape at %d", in, out, i)
			}
			hi, _ := unhex(out[i+1])
			lo, _ := unhex(out[i+2])
			if d := hi<<4 | lo; pathClass[d]&pcUnreserved != 0 || d == 0 || d == '\\' {
				t.Fatalf("%q: %q keeps the escape of %q", in, out, d)
			}
			i += 2
		case b != '/' && pathClass[b]&pcRaw == 0:
			t.Fatalf("%q: %q has the raw byte %q", in, out, b)
		}
	}
}

// cleanDecoded is the RFC 3986 section 5.2.4 reading of a decoded path
// with repeated slashes merged: path.Clean, keeping a trailing slash that
// the input had or that a final "." or ".." segment implies.
func cleanDecoded(d string) string {
	c := path.Clean(d)
	if c != "/" && (strings.HasSuffix(d, "/") || strings.HasSuffix(d, "/.") || strings.HasSuffix(d, "/..")) {
		c += "/"
	}
	return c
}

// BenchmarkNormalizePath is the cost per request of the normal form: the
// check alone for a path that is normal, the rewrite into Scratch for one
// that is not.
func BenchmarkNormalizePath(b *testing.B) {
	for _, bc := range []struct{ name, path string }{
		{"normal", "/static/js/app.4f3c2b.js"},
		{"rewritten", "//static/./js/%61pp.4f3c2b.js"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newCtx(request("GET", "", bc.path))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.Scratch = c.Scratch[:0]
				if !c.normalizePath() {
					b.Fatal("refused")
				}
			}
		})
	}
}
