package app

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// pendingConfig is a static route whose index file and error page are
// too large to be read on the loop, so that a miss of either is answered
// by the route's continuation once the cache has read it.
const pendingConfig = `
routes:
  - path: /
    headers:
      response: {add: {X-Rule: one}}
    static:
      root: ./site
      error_pages: {404: ./site/404.html}
      compress: {encodings: []}
`

// pendingFiles are pendingConfig's site: a large index file and error
// page, and a small file.
func pendingFiles() map[string]string {
	return map[string]string{
		"dir/index.html": string(pseudoRandom(150<<10, 7)),
		"404.html":       string(pseudoRandom(120<<10, 8)),
		"a.txt":          "file a\n",
	}
}

// Requests answered later by a static route's continuation, pipelined on
// one HTTP/1.1 connection: a missing file with a body, answered with the
// large error page; a directory, answered with its large index; a small
// file. Each comes in order, whole, with the route's response rule
// applied once, and the body of the first request is read past, not
// parsed as a request.
func TestPendingStaticPipelined(t *testing.T) {
	files := pendingFiles()
	ts := startServer(t, pendingConfig, files)
	index, page := files["dir/index.html"], files["404.html"]
	c := ts.dial()
	fmt.Fprint(c, "GET /missing HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\nGET /smuggled HTTP/1.1\r\nX: y\r\n"+
		"GET /dir/ HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	for i, want := range []struct {
		status int
		body   string
	}{{404, page}, {200, index}, {200, "file a\n"}} {
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != want.status || body != want.body {
			t.Fatalf("response %d: status %d, %d bytes (want %d, %d bytes)", i, resp.StatusCode, len(body), want.status, len(want.body))
		}
		if got := resp.Header.Values("X-Rule"); len(got) != 1 || got[0] != "one" {
			t.Errorf("response %d: X-Rule %q, want [one]", i, got)
		}
	}
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Fatalf("after the last response: %q, %v", rest, err)
	}
}

// The same continuations over h2c, on concurrent streams of one
// connection.
func TestPendingStaticH2(t *testing.T) {
	files := pendingFiles()
	ts := startServer(t, pendingConfig, files)
	cl := h2cClient(t)
	type result struct {
		path   string
		status int
		body   []byte
		rule   []string
		err    error
	}
	paths := map[string]string{"/missing": files["404.html"], "/dir/": files["dir/index.html"], "/a.txt": "file a\n"}
	ch := make(chan result, len(paths))
	for p := range paths {
		go func(p string) {
			resp, err := cl.Get(ts.url(p))
			if err != nil {
				ch <- result{path: p, err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- result{p, resp.StatusCode, b, resp.Header.Values("X-Rule"), err}
		}(p)
	}
	for range paths {
		r := <-ch
		want := http.StatusOK
		if r.path == "/missing" {
			want = http.StatusNotFound
		}
		if r.err != nil || r.status != want || string(r.body) != paths[r.path] || strings.Join(r.rule, ",") != "one" {
			t.Errorf("%s: status %d, %d bytes, X-Rule %q, %v", r.path, r.status, len(r.body), r.rule, r.err)
		}
	}
}
