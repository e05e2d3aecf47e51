//go:build !race

package app

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"gale/app/tlsconn"
)

// tlsFakeConn is the part of gnet.Conn a TLS connection uses, over
// in-memory buffers: in holds ciphertext from the client, out collects
// what the server writes.
type tlsFakeConn struct {
	gnet.Conn // nil: any other method panics
	in, out   []byte
	woke      chan struct{} // if set, told of each Wake (cap 1)
}

func (f *tlsFakeConn) Read(p []byte) (int, error) {
	n := copy(p, f.in)
	f.in = f.in[n:]
	if n == 0 {
		return 0, io.ErrShortBuffer
	}
	return n, nil
}
func (f *tlsFakeConn) Peek(int) ([]byte, error)    { return f.in, nil }
func (f *tlsFakeConn) Discard(n int) (int, error)  { f.in = f.in[:0]; return n, nil }
func (f *tlsFakeConn) Write(b []byte) (int, error) { f.out = append(f.out, b...); return len(b), nil }
func (f *tlsFakeConn) OutboundBuffered() int       { return 0 }
func (f *tlsFakeConn) InboundBuffered() int        { return len(f.in) }
func (f *tlsFakeConn) Wake(gnet.AsyncCallback) error {
	if f.woke != nil {
		select {
		case f.woke <- struct{}{}:
		default:
		}
	}
	return nil
}
func (f *tlsFakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (f *tlsFakeConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443}
}
func (f *tlsFakeConn) Fd() int { return -1 }

// memConn is the client's side: writes go to toServer, reads wait for
// toClient.
type memConn struct {
	net.Conn
	mu       sync.Mutex
	cond     sync.Cond
	toServer []byte
	toClient []byte
	wrote    chan struct{} // if set, told of each Write (cap 1)
}

func (m *memConn) Write(p []byte) (int, error) {
	m.mu.Lock()
	m.toServer = append(m.toServer, p...)
	m.mu.Unlock()
	if m.wrote != nil {
		select {
		case m.wrote <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (m *memConn) Read(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.toClient) == 0 {
		m.cond.Wait()
	}
	n := copy(p, m.toClient)
	m.toClient = m.toClient[n:]
	return n, nil
}

func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

// tlsServeAllocs is what a kept-alive request over TLS allocates: one
// object inside crypto/tls, which wraps the connection in a small reader
// (atLeastReader) each time it reads a record header from it. Everything
// of ours (the shim, the plaintext buffer, the record output) allocates
// nothing in steady state; the shim hands crypto/tls one record at a time
// so that no second, empty read (a second allocation) is needed.
const tlsServeAllocs = 1

// TestTLSServeAllocs measures the allocations of a kept-alive request over
// an established TLS 1.3 connection, from ciphertext in gnet's buffer to
// the encrypted response handed to gnet.
// tlsPipe returns a server connection and a TLS 1.3 client whose
// handshake with it is complete, over in-memory buffers: the caller plays
// the loop.
func tlsPipe(t testing.TB) (*conn, *tlsFakeConn, *tls.Conn, *memConn) {
	return tlsPipeALPN(t, nil)
}

// tlsPipeALPN is tlsPipe with the client offering protos by ALPN (and the
// server offering h2 when protos has it).
func tlsPipeALPN(t testing.TB, protos []string) (*conn, *tlsFakeConn, *tls.Conn, *memConn) {
	return tlsPipeWith(t, protos, false)
}

// tlsPipeWith is tlsPipeALPN; with mtls, the listener requires a client
// certificate, the client presents one, and /hello is allowed only to a
// verified one (client_cert).
func tlsPipeWith(t testing.TB, protos []string, mtls bool) (*conn, *tlsFakeConn, *tls.Conn, *memConn) {
	offerH2 := slices.Contains(protos, "h2")
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(dir, "cert", "localhost")
	yamlText := `
listen:
  - {address: "127.0.0.1:0", tls: {certificates: [{cert: cert.pem, key: cert.key}]}}
routes:
  - path: /hello
    respond: {status: 200, body: "hello\n"}
`
	var clientCerts []tls.Certificate
	if mtls {
		yamlText = `
listen:
  - {address: "127.0.0.1:0", tls: {certificates: [{cert: cert.pem, key: cert.key}], client_auth: {mode: require, ca: ca.pem}}}
routes:
  - path: /hello
    access: [{allow: all, client_cert: verified}]
    respond: {status: 200, body: "hello\n"}
`
		writeAtomic(t, dir+"/ca.pem", ca.rootPEM)
		key := genKey(t)
		leaf := ca.sign(&x509.Certificate{SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: "client"},
			NotBefore: ca.notBefore, NotAfter: ca.notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca.inter, &key.PublicKey, ca.interKey)
		clientCerts = []tls.Certificate{{Certificate: [][]byte{leaf.Raw, ca.inter.Raw}, PrivateKey: key}}
	}
	s, cfg := compiledServer(t, yamlText, dir)
	tl, err := tlsconn.NewListener(0, &cfg.Listen[0], func(string, ...any) {}, func() bool { return offerH2 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	progress := make(chan struct{}, 1) // the server's handshake woke the loop, or the client wrote
	fc := &tlsFakeConn{woke: progress}
	cs := newConn(newLoop(s, nil), fc)
	cs.tls = tlsconn.New(&cs.Conn, &cs.loop.tls, tl)
	cs.SetLayer(cs.tls)

	// The handshake, pumped by hand: the test plays the loop.
	mc := &memConn{wrote: progress}
	mc.cond.L = &mc.mu
	client := tls.Client(mc, &tls.Config{RootCAs: ca.pool, ServerName: "localhost", NextProtos: protos, Certificates: clientCerts})
	done := make(chan error, 1)
	go func() { done <- client.Handshake() }()
	deadline := time.Now().Add(5 * time.Second)
	var hsErr error
	for hsDone := false; !hsDone || cs.tls.Handshaking(); {
		if time.Now().After(deadline) {
			t.Fatal("handshake did not complete")
		}
		mc.mu.Lock()
		fc.in = append(fc.in, mc.toServer...)
		mc.toServer = mc.toServer[:0]
		mc.mu.Unlock()
		if a := cs.onTraffic(); a != gnet.None {
			t.Fatalf("action %v during the handshake", a)
		}
		mc.mu.Lock()
		mc.toClient = append(mc.toClient, fc.out...)
		fc.out = fc.out[:0]
		mc.mu.Unlock()
		mc.cond.Broadcast()
		if hsDone && !cs.tls.Handshaking() {
			break
		}
		select { // the next step of either side, or the client's end
		case hsErr = <-done:
			hsDone = true
		case <-progress:
		case <-time.After(time.Until(deadline)):
		}
	}
	if hsErr != nil {
		t.Fatal(hsErr)
	}
	return cs, fc, client, mc
}

func TestTLSServeAllocs(t *testing.T) {
	testTLSServeAllocs(t, false)
}

// TestTLSServeAllocsClientCert is TestTLSServeAllocs on a connection whose
// client presented a certificate, to a route whose access rule checks it:
// the certificate is described once, at the handshake, and requests only
// share it.
func TestTLSServeAllocsClientCert(t *testing.T) {
	testTLSServeAllocs(t, true)
}

func testTLSServeAllocs(t *testing.T, mtls bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cs, fc, client, mc := tlsPipeWith(t, nil, mtls)
	// The client's records are made ahead, so that only the server's
	// work is measured.
	req := []byte("GET /hello HTTP/1.1\r\nHost: localhost\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	const warm, runs = 10, 200
	records := make([][]byte, warm+runs+2)
	for i := range records {
		if _, err := client.Write(req); err != nil {
			t.Fatal(err)
		}
		records[i] = append([]byte(nil), mc.toServer...)
		mc.toServer = mc.toServer[:0]
	}
	next := 0
	serve := func() {
		fc.in = append(fc.in[:0], records[next]...)
		next++
		if a := cs.onTraffic(); a != gnet.None {
			t.Fatalf("action %v", a)
		}
		if len(fc.out) == 0 || len(fc.in) != 0 {
			t.Fatalf("wrote %d bytes, left %d", len(fc.out), len(fc.in))
		}
		fc.out = fc.out[:0]
	}
	if mtls {
		if cs.Conn.Cert == nil || cs.Conn.Cert.CommonName != "client" {
			t.Fatalf("the connection's certificate: %+v", cs.Conn.Cert)
		}
		// The route lets the certificate through: read one response.
		fc.in = append(fc.in[:0], records[next]...)
		next++
		cs.onTraffic()
		mc.mu.Lock()
		mc.toClient = append(mc.toClient, fc.out...)
		mc.mu.Unlock()
		fc.out = fc.out[:0]
		resp, err := http.ReadResponse(bufio.NewReader(client), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("response %v %v", resp, err)
		}
	}
	for i := 0; i < warm; i++ {
		serve() // grow the buffers
	}
	n := testing.AllocsPerRun(runs, serve)
	t.Logf("allocations per kept-alive request over TLS 1.3: %v", n)
	if n > tlsServeAllocs {
		t.Fatalf("%v allocations per request, want at most %d", n, tlsServeAllocs)
	}
}

// BenchmarkTLSServe is BenchmarkServeRespond over an established TLS 1.3
// connection: decrypting the request, serving it, encrypting the
// response (the client's encryption is done outside the timer).
func BenchmarkTLSServe(b *testing.B) {
	cs, fc, client, mc := tlsPipe(b)
	req := []byte("GET /hello HTTP/1.1\r\nHost: localhost\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
	records := make([][]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(records)
		if j == 0 {
			b.StopTimer()
			for k := range records {
				if _, err := client.Write(req); err != nil {
					b.Fatal(err)
				}
				records[k] = append(records[k][:0], mc.toServer...)
				mc.toServer = mc.toServer[:0]
			}
			b.StartTimer()
		}
		fc.in = append(fc.in[:0], records[j]...)
		cs.onTraffic()
		fc.out = fc.out[:0]
	}
}
