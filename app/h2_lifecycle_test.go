package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestH2IdleTimeout leaves an HTTP/2 connection without streams past
// timeouts.idle: gale sends GOAWAY(NO_ERROR) and closes it.
func TestH2IdleTimeout(t *testing.T) {
	t.Parallel()
	ts := startServer(t, "server: {timeouts: {idle: 300ms}}\nroutes:\n  - path: /\n    respond: {body: \"hi\\n\"}\n", nil)
	hc := dialH2C(t, ts.addr, 1<<20, 0)
	id := hc.get("/")
	if _, b := hc.readUntilEnd(id); string(b[id]) != "hi\n" {
		t.Fatalf("body %q", b[id])
	}
	start := time.Now()
	goaway := false
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			break // closed by the server
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			if g.ErrCode != http2.ErrCodeNo || g.LastStreamID != id {
				t.Fatalf("GOAWAY %v last %d", g.ErrCode, g.LastStreamID)
			}
			goaway = true
		}
	}
	if !goaway {
		t.Fatal("closed without GOAWAY")
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	if st := ts.srv.Stats(); st.TimedOut == 0 {
		t.Fatal("the idle close was not counted")
	}
}

// TestH2AccessLog logs each HTTP/2 stream with protocol HTTP/2.0, the
// authority as host, and the status and body size.
func TestH2AccessLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	ts := startServer(t, fmt.Sprintf("access_log: {path: %q}\n", logPath)+"routes:\n  - path: /\n    respond: {body: \"hi\\n\"}\n", nil)
	hc := dialH2C(t, ts.addr, 1<<20, 0)
	a, b := hc.get("/one?x=1"), hc.get("/two")
	hc.readUntilEnd(a, b)
	ts.stop()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{`"GET /one?x=1 HTTP/2.0" 200 3`, `"GET /two HTTP/2.0" 200 3`} {
		if !strings.Contains(log, want) {
			t.Fatalf("no %q in the access log:\n%s", want, log)
		}
	}
}
