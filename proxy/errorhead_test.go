package proxy_test

import (
	"io"
	"net"
	"net/http"
	"testing"
)

// TestErrorHeadAfterRelay: a 502 that follows a relayed response on the
// same loop carries one Server field and its Content-Type. (The route's
// response rules ran on the relayed head through the loop's scratch
// response, which was left sharing storage with the list the error head
// is built in: the error's Server overwrote its Content-Type.)
func TestErrorHeadAfterRelay(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	g := startGale(t, "routes:\n  - path: /dead/\n    proxy: {to: [\""+dead+"\"]}\n  - path: /\n    proxy: {to: [\""+up.hostport()+"\"]}\n")
	rc := g.dial()
	for i := range 3 {
		rc.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp, body := rc.response("GET"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("relayed: %d %q", resp.StatusCode, body)
		}
		rc.send("GET /dead/a HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, _ := rc.response("GET")
		if resp.StatusCode != 502 {
			t.Fatalf("%d, want 502", resp.StatusCode)
		}
		if s := resp.Header.Values("Server"); len(s) != 1 || s[0] != "gale" {
			t.Errorf("round %d: Server %q, want one \"gale\"", i, s)
		}
		if ct := resp.Header.Values("Content-Type"); len(ct) != 1 {
			t.Errorf("round %d: Content-Type %q, want one", i, ct)
		}
	}
}
