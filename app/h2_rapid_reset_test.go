package app

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rapidResetSite proxies /up/ to an upstream that counts what reaches it.
const rapidResetSite = `
routes:
  - path: /up/
    proxy: {to: ["$UP"]}
  - path: /
    respond: {status: 200, body: "local\n"}
`

// resetFlood builds what one Rapid Reset connection sends (CVE-2023-44487):
// the preface, SETTINGS, pairs HEADERS+RST_STREAM for GET path, and a
// PING whose ACK tells the sender that gale handled everything before it.
func resetFlood(t *testing.T, path string, pairs int) []byte {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var out bytes.Buffer
	out.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&out, nil)
	_ = fr.WriteSettings()
	for i := range pairs {
		id := uint32(2*i + 1)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	_ = fr.WritePing(false, [8]byte{'f', 'l', 'o', 'o', 'd'})
	return out.Bytes()
}

// floodFrom is the address the flood comes from: another loopback
// address than the normal client's, since budgets are per address.
var floodFrom = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// floodOnce sends flood on a new connection from floodFrom to addr in
// one write and waits for the PING ACK, or the connection's end (gale
// closes a flood's connection). It reports the ACK, or the code of the
// GOAWAY that came instead (-1 for none).
func floodOnce(addr string, flood []byte) (acked bool, goAway http2.ErrCode) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: floodFrom}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return false, ^http2.ErrCode(0)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	goAway = ^http2.ErrCode(0)
	if _, err := c.Write(flood); err != nil {
		return false, goAway
	}
	fr := http2.NewFramer(io.Discard, c)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return false, goAway
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if f.IsAck() {
				return true, goAway
			}
		case *http2.GoAwayFrame:
			goAway = f.ErrCode
		}
	}
}

// TestH2RapidResetAcrossConnections spreads Rapid Reset over many h2c
// connections from one address, each well under the per-connection reset
// budget, against a proxy route: a stream reset in the read that brought
// its request is never forwarded (no upstream request, no dial); the
// resets are charged to the address, which gets no HTTP/2 connection once
// its budget is spent; and a normal client from another address,
// interleaved with the flood, gets every answer.
func TestH2RapidResetAcrossConnections(t *testing.T) {
	var upstreamReqs atomic.Int64
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamReqs.Add(1)
		_, _ = io.WriteString(w, "up\n")
	}))
	ts := startServer(t, strings.ReplaceAll(rapidResetSite, "$UP", up), nil)
	defer ts.stop()

	const conns, parallel, pairs = 40, 8, 100
	flood := resetFlood(t, "/up/flood", pairs)
	var acked atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for range conns {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if ok, _ := floodOnce(ts.addr, flood); ok {
					acked.Add(1)
				}
			}()
		}
		wg.Wait()
	}()

	client := h2cClient(t)
	normal, failed := 0, 0
	deadline := time.Now().Add(20 * time.Second)
	for flooding := true; flooding || normal < 5; normal++ {
		select {
		case <-done:
			flooding = false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the flood did not end within 20s")
		}
		resp, err := client.Get(ts.url("/up/normal"))
		if err != nil {
			failed++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "up\n" {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("the normal client failed %d of %d requests during the flood", failed, normal)
	}
	if acked.Load() == 0 {
		t.Fatal("no flood connection was handled to its end")
	}
	// Every flood connection that got its PING ACK was handled to its
	// end: its streams were dispatched or dropped by then.
	st := ts.srv.ProxyStats()
	if extra := int64(st.Requests) - int64(normal); extra > 0 {
		t.Errorf("%d reset streams were forwarded (%d dials; upstream saw %d requests for %d normal ones); want none",
			extra, st.Dials, upstreamReqs.Load(), normal)
	}
	if n := ts.srv.Stats().ResetFloods; n == 0 {
		t.Errorf("%d resets from one address spent no budget", conns*pairs)
	}
	if _, code := floodOnce(ts.addr, flood); code != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("a new connection from the flooding address: GOAWAY %v, want ENHANCE_YOUR_CALM", code)
	}
	t.Logf("%d flood connections (%d acked) x %d resets; normal client %d requests; proxy requests %d, dials %d",
		conns, acked.Load(), pairs, normal, st.Requests, st.Dials)
}
