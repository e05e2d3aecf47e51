package acme

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"
	"go.uber.org/zap"

	"gale/config"
)

func TestLooksLikeHTTP01(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/.well-known/acme-challenge/abc-DEF_123", true},
		{"HEAD", "/.well-known/acme-challenge/abc", false},
		{"POST", "/.well-known/acme-challenge/abc", false},
		{"GET", "/.well-known/acme-challenge/", false},
		{"GET", "/.well-known/acme-challenge/a/b", false},
		{"GET", "/.well-known/acme-challenge/a%2e", false},
		{"GET", "/.well-known/acme-challenge/..", false},
		{"GET", "/.well-known/acme-challengeX/abc", false},
		{"GET", "/.WELL-KNOWN/acme-challenge/abc", false},
		{"GET", "/.well-known/acme-challenge/" + strings.Repeat("a", 300), false},
	} {
		if got := LooksLikeHTTP01([]byte(tc.method), []byte(tc.path)); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestRedirectPort: case and trailing dots do not matter, other names
// are not redirected, and the lookup allocates nothing (it runs on the
// event loops).
func TestRedirectPort(t *testing.T) {
	m := &Manager{}
	m.redirect.Store(&map[string]int{"example.com": 8443})
	for host, want := range map[string]bool{"example.com": true, "EXAMPLE.com.": true, "www.example.com": false, "": false} {
		if p, ok := m.RedirectPort([]byte(host)); ok != want || (ok && p != 8443) {
			t.Errorf("%q: %d %v", host, p, ok)
		}
	}
	host := []byte("Example.COM")
	if n := testing.AllocsPerRun(100, func() { m.RedirectPort(host) }); n != 0 {
		t.Errorf("RedirectPort allocates %.0f times", n)
	}
}

// TestOnDemandRate: burst+1 approvals at once, then one per interval.
func TestOnDemandRate(t *testing.T) {
	g := newOnDemandGate(&config.OnDemand{Ask: "http://127.0.0.1:9/", Interval: time.Minute, Burst: 2}, slog.Default(), func(string) bool { return false })
	now := time.Unix(1000, 0)
	for i := range 3 {
		if !g.take(now) {
			t.Fatalf("approval %d of the burst refused", i+1)
		}
	}
	if g.take(now) {
		t.Fatal("a fourth approval at once was granted")
	}
	if !g.take(now.Add(time.Minute)) || g.take(now.Add(time.Minute)) {
		t.Fatal("after one interval: want exactly one more approval")
	}
}

// TestZapToSlog: certmagic's entries reach the slog logger with their
// level, message and fields.
func TestZapToSlog(t *testing.T) {
	var b bytes.Buffer
	l := zapToSlog(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Named("obtain").With(zap.String("identifier", "a.example")).Error("could not get certificate", zap.Error(errRefused))
	l.Debug("hidden")
	out := b.String()
	for _, want := range []string{"level=ERROR", `msg="acme: could not get certificate"`, "logger=obtain", "identifier=a.example", "error=\"acme: on-demand: the ask endpoint refused the name\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("a debug entry passed an info logger: %q", out)
	}
}

// TestOnDemandShares: questions about new names are bounded per client
// address and in all; a renewal is not, and an ask endpoint that cannot
// be reached approves it (refusing would drop a serving certificate),
// while one that answers 403 refuses it.
func TestOnDemandShares(t *testing.T) {
	g := newOnDemandGate(&config.OnDemand{Ask: "http://127.0.0.1:1/", Interval: time.Minute}, slog.New(slog.DiscardHandler), func(n string) bool { return n == "known.example" })
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	if !g.asks.claim(a) || !g.asks.claim(a) || g.asks.claim(a) {
		t.Fatal("one address: want exactly 2 questions in flight")
	}
	for i := range maxAsks - 2 {
		if !g.asks.claim(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})) {
			t.Fatalf("question %d of %d refused", i+3, maxAsks)
		}
	}
	if g.asks.claim(b) {
		t.Fatal("a question past maxAsks was allowed")
	}
	g.asks.release(a)
	if !g.asks.claim(b) {
		t.Fatal("a freed slot was not given out")
	}
	if err := g.decide(context.Background(), "known.example"); err != nil {
		t.Errorf("a renewal with the ask endpoint unreachable: %v, want approved", err)
	}
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }))
	defer refuse.Close()
	g.ask, _ = url.Parse(refuse.URL)
	if err := g.decide(context.Background(), "known.example"); !errors.Is(err, errRefused) {
		t.Errorf("a renewal the endpoint refuses: %v, want refused", err)
	}
}

// TestReadyEvents: a listed name's first certificate is waited for while
// it is being obtained; a failed attempt ends the wait and no handshake
// waits until the next attempt starts; a cached certificate ends it for
// good.
func TestReadyEvents(t *testing.T) {
	m := &Manager{ready: map[string]chan struct{}{"a.example": make(chan struct{})}, failing: map[string]bool{}, known: map[string]bool{}}
	ch := m.waitReady("a.example")
	if ch == nil {
		t.Fatal("no wait for a name being obtained")
	}
	_ = m.onEvent(context.Background(), "cert_failed", map[string]any{"identifier": "a.example", "renewal": false})
	select {
	case <-ch:
	default:
		t.Fatal("a failed attempt did not end the wait")
	}
	if m.waitReady("a.example") != nil {
		t.Fatal("a handshake waits after the failed attempt")
	}
	_ = m.onEvent(context.Background(), "cert_obtaining", map[string]any{"identifier": "a.example"})
	if m.waitReady("a.example") == nil {
		t.Fatal("no wait during the next attempt")
	}
	_ = m.onEvent(context.Background(), "cached_managed_cert", map[string]any{"sans": []string{"A.example"}})
	if m.waitReady("a.example") != nil || !m.has("a.example") {
		t.Fatal("a cached certificate did not end the wait")
	}
}

func TestDropPlaceholderContact(t *testing.T) {
	acct, _ := dropPlaceholderContact(context.Background(), nil, acme.Account{Contact: []string{"mailto:default", "mailto:ops@example.com"}})
	if len(acct.Contact) != 1 || acct.Contact[0] != "mailto:ops@example.com" {
		t.Errorf("contacts %v", acct.Contact)
	}
}
