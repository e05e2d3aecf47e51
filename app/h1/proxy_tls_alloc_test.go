//go:build !race

package h1

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"gale/app/wire"
	"gale/upstream"
)

// TestProxyTLSAllocs proves that forwarding to a kept-alive https://
// upstream allocates nothing of ours per request once the connection is
// open: the request rewrite encrypted into the upstream's output (the
// shim's record buffer), the response decrypted into the connection's
// plaintext buffer, parsed and relayed, for a small body (one record) and
// for one of 16 KiB (two). What remains is crypto/tls's own object per
// record it reads (tlsRecordAllocs). The upstream is crypto/tls's server:
// the handshake runs over a pipe, as a dial runs it, and the server's
// records are made before each measurement so that only gale's side is
// counted.
func TestProxyTLSAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, size := range []int{128, 16 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			peer := newTLSPeer(t)
			f := newProxyFixture(t, `  - path: /api/
    proxy: {to: ["https://127.0.0.1:9"], tls: {ca: `+peer.caFile+`}}
`)
			f.cs.Loop.Shared.Proxies.Dial = peer.dial(t, f)
			f.up.keep = make([]byte, 0, 1<<20)
			f.req = []byte("GET /api/users?id=7 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n")
			peer.plain = append([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: "+
				strconv.Itoa(size)+"\r\n\r\n"), bytes.Repeat([]byte{'x'}, size)...)

			const runs = 200
			f.exchange(t) // dials, reads the session ticket, grows the buffers
			records := peer.encrypt(t, runs+2)
			next := func() {
				f.resp, records = records[0], records[1:]
				f.exchange(t)
			}
			next()
			want := tlsRecordAllocs * recordCount(t, records[0])
			n := testing.AllocsPerRun(runs, next)
			t.Logf("%v allocations per request proxied over TLS (%d-byte body, %d records)", n, size, recordCount(t, f.resp))
			if n > float64(want) {
				t.Fatalf("%v allocations per request proxied over TLS, want at most %d (crypto/tls's, one per record)", n, want)
			}
			if s := f.cs.Loop.Shared.Proxies.Stats(); s.Dials != 1 || s.Reused < runs {
				t.Errorf("dials %d reused %d: the TLS connection was not kept", s.Dials, s.Reused)
			}
			if got := peer.requests(t, f.up.keep, "GET /api/users?id=7 HTTP/1.1\r\n"); got != runs+3 {
				t.Errorf("the upstream decrypted %d requests, want %d", got, runs+3)
			}
		})
	}
}

// tlsRecordAllocs is what crypto/tls allocates per record it reads: it
// wraps the transport in a small reader (atLeastReader) each time it
// reads a record header from it (app's tlsServeAllocs, the listener
// side, is the same object). The shim hands it one record per Read, so a
// record costs one read and no empty second read.
const tlsRecordAllocs = 1

// recordCount returns how many TLS records b holds (whole ones only).
func recordCount(t *testing.T, b []byte) int {
	n := 0
	for len(b) >= 5 {
		l := 5 + (int(b[3])<<8 | int(b[4]))
		if l > len(b) {
			t.Fatalf("a partial record of %d bytes", len(b))
		}
		b = b[l:]
		n++
	}
	return n
}

// tlsPeer is the upstream's side of one TLS connection: crypto/tls's
// server over peerConn.
type tlsPeer struct {
	caFile string
	cert   tls.Certificate
	pc     peerConn
	srv    *tls.Conn
	plain  []byte // the response
}

// peerConn carries the handshake over a pipe; after it, the server's
// records are collected in out and its reads come from in.
type peerConn struct {
	net.Conn
	after bool
	in    []byte
	out   []byte
}

func (c *peerConn) Read(p []byte) (int, error) {
	if !c.after {
		return c.Conn.Read(p)
	}
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *peerConn) Write(p []byte) (int, error) {
	if !c.after {
		return c.Conn.Write(p)
	}
	c.out = append(c.out, p...)
	return len(p), nil
}

// newTLSPeer makes a self-signed ECDSA certificate for 127.0.0.1 and
// writes it where the route's tls.ca reads it.
func newTLSPeer(t *testing.T) *tlsPeer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upstream"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	p := &tlsPeer{caFile: filepath.Join(t.TempDir(), "ca.pem"), cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}}
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dial is the fixture's dial: the handshake over a pipe with the server
// answering in a goroutine, then the connection opens on the fake.
func (p *tlsPeer) dial(t *testing.T, f *proxyFixture) func(wire.Upstream) {
	return func(uc wire.Upstream) {
		f.uc = uc
		cli, srv := net.Pipe()
		defer cli.Close()
		defer srv.Close()
		p.pc.Conn = srv
		p.srv = tls.Server(&p.pc, &tls.Config{Certificates: []tls.Certificate{p.cert}, MinVersion: tls.VersionTLS13,
			DynamicRecordSizingDisabled: true}) // full records from the first: a fixed count per response
		done := make(chan error, 1)
		go func() { done <- p.srv.Handshake() }()
		if err := uc.(*upstream.Conn).Handshake(cli); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p.pc.after = true
		f.resp = p.encrypt(t, 1)[0] // the answer to the request that dialed
		uc.OnOpen(f.up)
	}
}

// encrypt returns n copies of p.plain as the server's records, one
// response each, in the order they are to be read.
func (p *tlsPeer) encrypt(t *testing.T, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p.pc.out = nil
		if _, err := p.srv.Write(p.plain); err != nil {
			t.Fatal(err)
		}
		out[i] = p.pc.out
	}
	return out
}

// requests decrypts what gale sent and counts the request lines.
func (p *tlsPeer) requests(t *testing.T, sent []byte, line string) int {
	p.pc.in = sent
	got, err := io.ReadAll(p.srv)
	if err != nil && err != io.EOF && !bytes.Contains([]byte(err.Error()), []byte("EOF")) {
		t.Fatal(err)
	}
	return bytes.Count(got, []byte(line))
}
