package app

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// Issue 29, finding 5: paths with encoded slashes and path parameters are
// routed by their reading with "%2F" as "/" and ";..." dropped, so no
// spelling escapes the basic_auth of "/admin/" or the IP rule of
// "/internal/", while the upstream gets the client's spelling; the
// ambiguous ones ("..;", "%2F" next to a dot segment) are refused. The
// same on HTTP/1.1, h2c and HTTP/3.

const (
	want401    = "401"
	want403    = "403"
	want400    = "400"
	wantPublic = "public"
)

// pathEscapeCases are the spellings of "/admin/" and "/internal/" paths:
// the answer without credentials (the route's name stands for both, auth
// 401 and IP 403) and, for the routed ones, the target the upstream gets.
var pathEscapeCases = []struct {
	target string // with "P" for the prefix's name
	want   string // want401 (routed to the prefix), want400 or wantPublic
	fwd    string // what the upstream gets, for routed ones
}{
	{"/P/x", want401, "/P/x"},
	{"/P%2Fx", want401, "/P%2Fx"},
	{"/P%2fx", want401, "/P%2fx"},
	{"/P/a%2Fb/c", want401, "/P/a%2Fb/c"},
	{"/P%252Fx", wantPublic, ""}, // decoded once: a segment named "P%2Fx"
	{"/P;x/y", want401, "/P;x/y"},
	{"/P;jsessionid=0AB1/y", want401, "/P;jsessionid=0AB1/y"},
	{"/P%3Bx/y", want401, "/P%3Bx/y"},
	{"/P%3bx/y", want401, "/P%3Bx/y"},
	{"/;x/P/y", want401, "/;x/P/y"},
	{"/%70;a=b/c%2Fd", want401, "/p;a=b/c%2Fd"}, // mixed, for "p..." prefixes only
	{"/P/..;/x", want400, ""},
	{"/x/..;/P/y", want400, ""},
	{"/P/.;/y", want400, ""},
	{"/P/..%3B/x", want400, ""},
	{"/x/..%2FP/y", want400, ""},
	{"/public%2F..%2FP/y", want400, ""},
	{"/P%2F..%2Fx", want400, ""},
	{"/P%2F%2Fx", want400, ""},
	{"/P/y%2F", want400, ""},
	{"/P%2Fy;z", want400, ""},
	{"/P%2Fx/..", want400, ""},
}

func TestPathEscapesKeepTheirRoute(t *testing.T) {
	t.Parallel()
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "upstream "+r.RequestURI)
	}))
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	ts := startTLSServer(t, fmt.Sprintf(`listen:
  - {address: "127.0.0.1:0", http3: true, tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
routes:
  - path: /admin/
    access: [{allow: 127.0.0.0/8}]
    basic_auth: {users: {alice: %q}}
    proxy: {to: [%q]}
  - path: /internal/
    access: [{deny: 127.0.0.0/8}, {allow: all}]
    proxy: {to: [%q]}
  - path: /p/
    basic_auth: {users: {alice: %q}}
    proxy: {to: [%q]}
  - path: /
    respond: {status: 200, body: "public"}
`, hash, up, up, hash, up), nil, nil)
	creds := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw"))

	plain := ts.srv.Addrs()[1]
	h2 := h2cClient(t)
	h3 := h3Client(t, ts)
	clients := map[string]func(t *testing.T, target, auth string) (int, string){
		"http1": func(t *testing.T, target, auth string) (int, string) {
			c, err := net.Dial("tcp", plain)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if auth != "" {
				auth = "Authorization: " + auth + "\r\n"
			}
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\n%sConnection: close\r\n\r\n", target, auth)
			resp, body := readResponse(t, bufio.NewReader(c), "GET")
			return resp.StatusCode, body
		},
		"h2c": func(t *testing.T, target, auth string) (int, string) {
			return opaqueGet(t, h2, "http", plain, target, auth)
		},
		"h3": func(t *testing.T, target, auth string) (int, string) {
			return opaqueGet(t, h3, "https", ts.tlsAddr, target, auth)
		},
	}
	for _, proto := range []string{"http1", "h2c", "h3"} {
		do := clients[proto]
		t.Run(proto, func(t *testing.T) {
			for _, prefix := range []string{"admin", "internal", "p"} {
				for _, tc := range pathEscapeCases {
					if tc.target[1] == '%' && prefix != "p" {
						continue
					}
					target := replaceP(tc.target, prefix)
					want := tc.want
					if want == want401 && prefix == "internal" {
						want = want403
					}
					status, body := do(t, target, "")
					switch want {
					case wantPublic:
						if status != 200 || body != "public" {
							t.Errorf("%s: %d %q; want the public route", target, status, body)
						}
						continue
					case want400, want401, want403:
						if fmt.Sprint(status) != want {
							t.Errorf("%s: %d %q; want %s", target, status, body, want)
							continue
						}
					}
					if want != want401 {
						continue
					}
					fwd := replaceP(tc.fwd, prefix)
					if status, body := do(t, target, creds); status != 200 || body != "upstream "+fwd {
						t.Errorf("%s with credentials: %d %q; want the upstream to get %q", target, status, body, fwd)
					}
				}
			}
		})
	}
}

// replaceP puts the prefix's name for each "P" of s.
func replaceP(s, prefix string) string {
	out := ""
	for i := 0; i < len(s); i++ {
		if s[i] == 'P' {
			out += prefix
		} else {
			out += string(s[i])
		}
	}
	return out
}

// opaqueGet sends GET with target as the :path, byte for byte.
func opaqueGet(t *testing.T, c *http.Client, scheme, host, target, auth string) (int, string) {
	t.Helper()
	req := &http.Request{Method: "GET", URL: &url.URL{Scheme: scheme, Host: host, Opaque: target}, Host: "localhost", Header: http.Header{}}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", target, err)
	}
	return resp.StatusCode, string(body)
}
