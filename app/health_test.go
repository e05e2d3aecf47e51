package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

const healthConfig = baseListen + `
server: {timeouts: {drain: 2s, shutdown: 5s}}
routes:
  - path: /livez
    health: live
  - path: /readyz
    health: ready
  - path: /
    respond: {body: "page\n"}
`

// getOnce makes one request on a new connection and returns its status.
func getOnce(t *testing.T, url string) (int, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// During a graceful stop, readiness fails before any connection is
// refused: /readyz answers 503 on new connections the server still
// accepts, and for timeouts.drain everything else is served as usual,
// /livez included, on new and kept-alive connections alike; after it the
// stop proceeds and the listener closes.
func TestHealthDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out timeouts.drain: not in -short")
	}
	ts := startServer(t, healthConfig, nil)
	if st, err := getOnce(t, ts.url("/readyz")); err != nil || st != 200 {
		t.Fatalf("ready before the stop: %d, %v", st, err)
	}
	kept := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	if resp, err := kept.Get(ts.url("/")); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	} else {
		t.Fatal(err)
	}

	stopped := make(chan error, 1)
	begun := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ts.srv.StopTimeout())
		defer cancel()
		stopped <- ts.srv.Stop(ctx)
	}()
	// Every probe is a new connection: each one the server answers is one
	// it did not refuse.
	for {
		st, err := getOnce(t, ts.url("/readyz"))
		if err != nil {
			t.Fatalf("a connection was refused before readiness failed: %v", err)
		}
		if st == 503 {
			break
		}
		if time.Since(begun) > 2*time.Second {
			t.Fatalf("readiness still %d after the drain delay", st)
		}
	}
	if time.Since(begun) < 2*time.Second {
		for _, p := range []string{"/livez", "/"} {
			if st, err := getOnce(t, ts.url(p)); err != nil || st != 200 {
				t.Errorf("%s on a new connection while draining: %d, %v", p, st, err)
			}
		}
		resp, err := kept.Get(ts.url("/livez"))
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("/livez on the kept-alive connection while draining: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(begun); d < 2*time.Second {
		t.Errorf("the stop took %v, less than the drain delay", d)
	}
	if c, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts after the stop")
	}
}
