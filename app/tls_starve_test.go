package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Handshake capacity against slow and silent clients: a slot is taken
// only for a complete ClientHello, an incomplete one is cut off by
// client_hello_timeout, one client address holds at most its share of the
// slots, and a freed slot goes to the first waiting connection at once.

// tlsInputTaken counts the server's TLS connections that have taken in
// bytes of their handshake (buffered them, or started it). It runs the
// count on each loop.
func (ts *tlsTestServer) tlsInputTaken() int {
	total := 0
	for _, l := range ts.srv.loopSlice() {
		done := make(chan int, 1)
		err := l.EL.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			n := 0
			for _, cs := range l.conns {
				if cs.tls != nil && cs.tls.InputTaken() {
					n++
				}
			}
			done <- n
			return nil
		}))
		if err != nil {
			ts.t.Fatal(err)
		}
		total += <-done
	}
	return total
}

// waitTLSInput waits until n TLS connections have taken in handshake
// bytes (see tlsInputTaken); the deadline is a failsafe.
func (ts *tlsTestServer) waitTLSInput(n int) {
	ts.t.Helper()
	if !waitUntil(5*time.Second, func() bool { return ts.tlsInputTaken() >= n }) {
		ts.t.Fatalf("%d TLS connections took in their bytes, want %d", ts.tlsInputTaken(), n)
	}
}

// dialFrom opens a raw connection to addr from the local address src
// ("127.0.0.2"), with a failsafe deadline.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// handshakeFrom completes a crypto/tls handshake and one request from src.
func (ts *tlsTestServer) handshakeFrom(src string) error {
	raw := dialFrom(ts.t, src, ts.tlsAddr)
	c := tls.Client(raw, ts.clientConfig("localhost"))
	if err := c.Handshake(); err != nil {
		return err
	}
	if _, err := io.WriteString(c, "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return err
	}
	resp, body := readResponse(ts.t, bufio.NewReader(c), "GET")
	if resp.StatusCode != 200 || body != "hello\n" {
		ts.t.Errorf("after the handshake: %d %q", resp.StatusCode, body)
	}
	return nil
}

// holdSlot sends a whole ClientHello from src and waits for the server's
// first flight: the connection then holds a handshake slot, and never
// answers.
func holdSlot(t *testing.T, src, addr string, hello []byte) net.Conn {
	t.Helper()
	c := dialFrom(t, src, addr)
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("no ServerHello for a complete ClientHello: %v", err)
	}
	return c
}

// TestTLSSilentClientsHoldNoSlot: with two handshake slots, clients that
// send one byte of a record, part of a ClientHello, all of it but the last
// byte, or drip it, do not delay a real client's handshake; they stay
// connected until client_hello_timeout (5s by default, shorter than the
// 8s handshake_timeout that held the slots before).
func TestTLSSilentClientsHoldNoSlot(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 8s, max_handshakes: 2}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	sends := [][]byte{
		{0x16}, {0x16}, {0x16}, // the first byte of a handshake record
		{0x16, 3, 1},
		hello[:len(hello)/2],
		hello[:len(hello)-1],
		fragmented(hello, 64)[:200],
	}
	for _, b := range sends {
		if _, err := ts.dial().Write(b); err != nil {
			t.Fatal(err)
		}
	}
	// Two clients drip their ClientHello, a byte every 20ms (it would
	// take them tens of seconds).
	stop := make(chan struct{})
	defer close(stop)
	for range 2 {
		c := ts.dial()
		go func() {
			for i := range hello {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if _, err := c.Write(hello[i : i+1]); err != nil {
					return
				}
			}
		}()
	}
	attackers := len(sends) + 2
	ts.waitTLSInput(attackers)

	if err := ts.handshakeFrom("127.0.0.1"); err != nil {
		t.Fatalf("handshake behind silent clients: %v", err)
	}
	// The handshake was not waiting for the server to cut them off.
	if open := ts.srv.Stats().Open; open < int64(attackers) {
		t.Fatalf("%d connections open when the handshake completed; the %d slow clients must still be connected", open, attackers)
	}
	t.Run("openssl", func(t *testing.T) {
		openssl := needTool(t, "openssl")
		out, err := runTool(t, "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", openssl,
			"s_client", "-connect", ts.tlsAddr, "-servername", "localhost", "-CAfile", ts.writeRootCA(t),
			"-verify_return_error", "-ign_eof")
		if err != nil || !strings.Contains(out, "\r\n\r\nhello\n") {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
		if open := ts.srv.Stats().Open; open < int64(attackers) {
			t.Fatalf("%d connections open after openssl's handshake; the %d slow clients must still be connected", open, attackers)
		}
	})
}

// TestTLSHandshakeShare: one client address may hold its share of the
// slots (max_handshakes 2: one); its next complete ClientHello, in one
// record or fragmented, is refused at once, while another address gets the
// free slot.
func TestTLSHandshakeShare(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 8s, max_handshakes: 2}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	holdSlot(t, "127.0.0.1", ts.tlsAddr, hello)

	for name, b := range map[string][]byte{
		"one record":         hello,
		"fragmented":         fragmented(hello, 100),
		"one-byte fragments": fragmented(hello, 1),
	} {
		c := dialFrom(t, "127.0.0.1", ts.tlsAddr)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		// Refused before handshake_timeout could have closed it.
		_ = c.SetReadDeadline(time.Now().Add(4 * time.Second))
		t.Run(name, func(t *testing.T) { expectClosed(t, c) })
	}

	if err := ts.handshakeFrom("127.0.0.2"); err != nil {
		t.Fatalf("handshake from another address: %v", err)
	}
}

// TestTLSNotAClientHello: a first record that is not the start of a TLS
// ClientHello is closed at once, with nothing sent, well before the
// ClientHello deadline (5s).
func TestTLSNotAClientHello(t *testing.T) {
	t.Parallel()
	ts := startTLSServer(t, tlsOnly, nil, nil)
	hello := captureClientHello(t)
	cases := map[string]string{
		"plain HTTP":              "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"SSLv2 hello":             "\x80\x2e\x01\x03\x01\x00\x15",
		"alert record":            "\x15\x03\x01\x00\x02\x02\x28",
		"application data record": "\x17\x03\x03\x00\x05hello",
		"record over 2^14":        "\x16\x03\x03\x40\x01\x01",
		"zero-length record":      "\x16\x03\x01\x00\x00",
		"record version 2":        "\x16\x02\x00\x00\x04\x01\x00\x00\x26",
		"ServerHello":             "\x16\x03\x01\x00\x04\x02\x00\x00\x26",
		"ClientHello over 64KiB":  "\x16\x03\x01\x00\x04\x01\x01\x00\x01",
		"empty ClientHello":       "\x16\x03\x01\x00\x04\x01\x00\x00\x00",
		"alert between fragments": string(fragmented(hello, 100)[:105]) + "\x15\x03\x01\x00\x02\x02\x28",
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			c := ts.dial()
			if _, err := io.WriteString(c, b); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			expectClosed(t, c)
		})
	}
}

// TestTLSQueuedHandshakeOwnDeadline: a connection waiting for the only
// slot is closed by its own handshake_timeout, counted from its accept,
// while the one holding the slot (accepted later) is still connected.
func TestTLSQueuedHandshakeOwnDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out handshake timeouts: not in -short")
	}
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 2500ms, max_handshakes: 1}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	queued := dialFrom(t, "127.0.0.1", ts.tlsAddr)
	// The holder's clock starts well after the queued one's, so their
	// deadlines are a second apart: many sweeps, even on a busy machine.
	// The test is about the deadlines' order: this sleep sets it.
	time.Sleep(time.Second)
	holder := holdSlot(t, "127.0.0.2", ts.tlsAddr, hello)
	if _, err := queued.Write(hello); err != nil {
		t.Fatal(err)
	}
	ts.waitTLSInput(2)
	holderClosed := make(chan error, 1)
	go func() {
		_ = holder.SetReadDeadline(time.Now().Add(6 * time.Second))
		_, err := io.Copy(io.Discard, holder)
		holderClosed <- err
	}()
	_ = queued.SetReadDeadline(time.Now().Add(4 * time.Second))
	expectClosed(t, queued)
	select {
	case err := <-holderClosed:
		t.Fatalf("the holder was closed before the queued connection timed out: %v", err)
	default:
	}
	if err := <-holderClosed; err != nil {
		t.Fatalf("holder: %v", err)
	}
}

// TestTLSFreedSlotGoesToWaiter: when the connection holding the only slot
// closes, a client waiting for it completes its handshake. The time from
// the close to the waiter's completed handshake is logged: it does not
// wait for the 100ms sweep.
func TestTLSFreedSlotGoesToWaiter(t *testing.T) {
	t.Parallel()
	yaml := `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT], handshake_timeout: 5s, max_handshakes: 1}}
` + tlsRoutes
	ts := startTLSServer(t, yaml, nil, nil)
	hello := captureClientHello(t)
	var waits []time.Duration
	for i := range 10 {
		// Addresses of their own each round: the share of the last
		// round's holder is given back by its handshake goroutine,
		// after the close.
		holder := holdSlot(t, fmt.Sprintf("127.0.1.%d", i+1), ts.tlsAddr, hello)
		raw := dialFrom(t, fmt.Sprintf("127.0.2.%d", i+1), ts.tlsAddr)
		done := make(chan error, 1)
		var at time.Time
		go func() {
			c := tls.Client(raw, ts.clientConfig("localhost"))
			err := c.Handshake()
			at = time.Now()
			done <- err
		}()
		ts.waitTLSInput(2)
		closed := time.Now()
		holder.Close()
		if err := <-done; err != nil {
			t.Fatalf("waiting handshake: %v", err)
		}
		waits = append(waits, at.Sub(closed))
		raw.Close()
		eventually(t, 5*time.Second, "the connections to close", func() bool { return ts.srv.Stats().Open == 0 })
	}
	// For scale: handshakes that wait for nothing.
	var alone []time.Duration
	for i := range 10 {
		raw := dialFrom(t, fmt.Sprintf("127.0.3.%d", i+1), ts.tlsAddr)
		start := time.Now()
		if err := tls.Client(raw, ts.clientConfig("localhost")).Handshake(); err != nil {
			t.Fatal(err)
		}
		alone = append(alone, time.Since(start))
		raw.Close()
	}
	t.Logf("from the holder's close to the waiter's handshake: %s; a handshake that waits for nothing: %s", spread(waits), spread(alone))
}

// spread describes durations by their minimum, median and maximum.
func spread(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("min %v, median %v, max %v", ds[0], ds[len(ds)/2], ds[len(ds)-1])
}
