package gateway_test

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncLog collects the server log across its goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFailureLogged: a FastCGI server that refuses answers 502 and a warn
// line that names it, the reason and the route, written before the client
// has its answer; more failures add at most one line a second.
func TestFailureLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	logs := &syncLog{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	g := startGale(t, dir, "routes:\n  - path: /\n    fastcgi: {to: \""+dead+"\", root: .}\n", log)
	c := httpClient()
	start := time.Now()
	for i := range 3 {
		resp, err := c.Get(g.url("/index.php"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 502 {
			t.Fatalf("%d, want 502", resp.StatusCode)
		}
		if i == 0 {
			line := logs.String()
			for _, want := range []string{"level=WARN", `msg="fastcgi server failed"`, "server=" + dead, `reason="connect: `, "route=/"} {
				if !strings.Contains(line, want) {
					t.Errorf("log %q lacks %q", line, want)
				}
			}
		}
	}
	secs := int(time.Since(start)/time.Second) + 2 // the seconds the requests touched
	if n := strings.Count(logs.String(), "fastcgi server failed"); n < 1 || n > secs {
		t.Errorf("%d failure lines for 3 failures over %d seconds, want at most one a second:\n%s", n, secs, logs.String())
	}
}
