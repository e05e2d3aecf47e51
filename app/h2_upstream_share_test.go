package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestH2UpstreamShare: one client address whose streams wait on a slow
// upstream, each on an upstream connection of its own, cannot take the
// descriptors another client needs: once more than half the budget is
// held, its further streams on proxy routes are answered 503, and a
// client from another address still gets its upstream connection.
func TestH2UpstreamShare(t *testing.T) {
	var held atomic.Int64
	release := make(chan struct{})
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/up/hold" {
			held.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "up\n")
	}))
	ts := startServer(t, fmt.Sprintf(`
server: {event_loops: 1}
routes:
  - path: /up/
    proxy: {to: [%q]}
`, up), nil)
	defer ts.stop()
	defer close(release)
	budget := ts.srv.sh.Budget
	budget.SetLimit(ts.srv.Stats().Budget.Used + 64)

	// Waves of streams, each wave sent once the last one settled: every
	// stream forwarded (it waits upstream) or refused (for its
	// address's share, or for the spent budget).
	const waves, wave = 6, 30
	c := dialFrom(t, "127.0.0.2", ts.addr)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/up/hold"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var out bytes.Buffer
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&out, nil)
	_ = fr.WriteSettings()
	go func() { _, _ = io.Copy(io.Discard, c) }()
	for w := range waves {
		for i := range wave {
			id := uint32(2*(w*wave+i) + 1)
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		}
		if _, err := c.Write(out.Bytes()); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		sent := int64((w + 1) * wave)
		eventually(t, 10*time.Second, "the wave forwarded or refused", func() bool {
			return held.Load()+int64(ts.srv.Stats().OverShare)+int64(ts.srv.ProxyStats().Refused) >= sent
		})
	}
	st := ts.srv.Stats()
	t.Logf("held upstream %d, over the share %d, refused for the budget %d; descriptors %d of %d",
		held.Load(), st.OverShare, ts.srv.ProxyStats().Refused, st.Budget.Used, st.Budget.Limit)

	resp, err := h2cClient(t).Get(ts.url("/up/fast"))
	if err != nil {
		t.Fatalf("the other client: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "up\n" {
		t.Errorf("the other client: %d %q; the first address took the descriptors it needed", resp.StatusCode, body)
	}
	if st.OverShare == 0 {
		t.Errorf("no stream was refused for its address's share")
	}
}
