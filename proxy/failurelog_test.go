package proxy_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// failureLines returns the "upstream failed" lines of the server log.
func failureLines(g *gale) []string {
	var out []string
	for _, l := range strings.Split(g.logs.String(), "\n") {
		if strings.Contains(l, `msg="upstream failed"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestFailureLogged: a 502 writes a warn line naming the upstream, the
// reason and the route before the client has its answer; a flood of
// failures writes at most one line a second, each counting the ones left
// out before it.
func TestFailureLogged(t *testing.T) {
	t.Parallel()
	dead := deadAddr(t)
	g := startGale(t, proxyRoute(dead))
	rc := g.dial()
	rc.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 502 {
		t.Fatalf("%d, want 502", resp.StatusCode)
	}
	lines := failureLines(g)
	if len(lines) != 1 {
		t.Fatalf("%d failure lines after one 502, want 1:\n%s", len(lines), g.logs.String())
	}
	for _, want := range []string{"level=WARN", "upstream=" + dead, `reason="connect: `, "route=/"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("failure line %q lacks %q", lines[0], want)
		}
	}

	const n = 300
	start := time.Now()
	for range n {
		rc.send("GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp, _ := rc.response("GET"); resp.StatusCode != 502 {
			t.Fatalf("%d, want 502", resp.StatusCode)
		}
	}
	secs := int(time.Since(start)/time.Second) + 2 // the seconds the flood touched, and the first request's
	lines = failureLines(g)
	if len(lines) > secs {
		t.Errorf("%d failure lines for %d failures in %d seconds, want at most one a second", len(lines), n+1, secs)
	}
	// Every failure is either a line or counted in the next line's
	// suppressed (the ones after the last line are still pending).
	counted := 0
	re := regexp.MustCompile(` suppressed=(\d+)`)
	for _, l := range lines {
		counted++
		if m := re.FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			counted += k
		}
	}
	if dials := int(g.srv.ProxyStats().DialFails); counted > dials {
		t.Errorf("lines account for %d failures, more than the %d dials that failed", counted, dials)
	}
}
