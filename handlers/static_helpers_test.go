package handlers

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"

	"gale/cache"
	"gale/codec"
)

// responseBody returns the body a response stands for: its Parts, its
// File region or its Body.
func responseBody(t *testing.T, r *Response) []byte {
	t.Helper()
	read := func(off, n int64) []byte {
		b := make([]byte, n)
		if _, err := r.File.ReadAt(b, off); err != nil && !(err == io.EOF && n == 0) {
			t.Fatalf("reading the file body: %v", err)
		}
		return b
	}
	switch {
	case r.Parts != nil:
		var out []byte
		for _, p := range r.Parts {
			if p.Data != nil {
				out = append(out, p.Data...)
			} else {
				out = append(out, read(p.Off, p.Len)...)
			}
		}
		return out
	case r.File != nil:
		return read(r.FileOffset, r.FileSize)
	}
	return r.Body
}

// wire renders c's response the way the server writes it and parses it
// back with net/http.
func wire(t *testing.T, c *Ctx) (*http.Response, []byte) {
	t.Helper()
	r := &c.Resp
	body := responseBody(t, r)
	var out []byte
	if r.Head != nil {
		out = AppendHead(out, r.Head, false, false)
	} else {
		h := codec.ResponseHead{Status: r.Status, Version: codec.HTTP11, Headers: r.Headers, ContentLength: -1}
		if r.Status >= 200 && r.Status != 204 && r.Status != 304 {
			h.ContentLength = int64(len(body))
		}
		out = codec.AppendResponseHead(out, &h)
	}
	method := string(c.Req.Method)
	if method != "HEAD" {
		out = append(out, body...)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("parsing the rendered response: %v\n%s", err, out)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the rendered body: %v", err)
	}
	return resp, got
}

// wireHeader returns a field of c's response as rendered.
func wireHeader(t *testing.T, c *Ctx, name string) string {
	t.Helper()
	resp, _ := wire(t, c)
	return resp.Header.Get(name)
}

// loopConn is a CacheAccess with a view of its own, as the server's
// connections have one per event loop.
type loopConn struct {
	view *cache.View
}

func (l *loopConn) CacheView(c *cache.Cache) *cache.View {
	if l.view == nil || l.view.Cache() != c {
		l.view = c.NewView()
	}
	return l.view
}
func (l *loopConn) CacheDone([]byte) cache.Done                    { return func(*cache.Entry, error) {} }
func (l *loopConn) CacheReady() bool                               { return false }
func (l *loopConn) CacheLoaded([]byte) (*cache.Entry, error, bool) { return nil, nil, false }
