package matrix

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// outcome is what a client received.
type outcome struct {
	status   int
	got      string // X-Got
	location string
	body     int64    // response body bytes
	sum      [32]byte // their SHA-256
	interim  int      // 1xx responses before the final one
	closed   bool     // the response announced the end of the connection
}

// client sends cells over one connection of its protocol (redialed
// when the server ends it) and reports what came back.
type client interface {
	do(c *cell, body []byte) (outcome, error)
	close()
}

// rawClient speaks HTTP/1.1 on a socket (TLS when cfg is set), framing
// every byte itself.
type rawClient struct {
	addr  string
	cfg   *tls.Config
	conn  net.Conn
	br    *bufio.Reader
	auth  string
	dials int // connections made
}

func (rc *rawClient) close() {
	if rc.conn != nil {
		_ = rc.conn.Close()
		rc.conn = nil
	}
}

func (rc *rawClient) dial() error {
	c, err := net.DialTimeout("tcp", rc.addr, 10*time.Second)
	if err != nil {
		return err
	}
	if rc.cfg != nil {
		tc := tls.Client(c, rc.cfg)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
			_ = c.Close()
			return fmt.Errorf("ALPN %q, want http/1.1", p)
		}
		c = tc
	}
	rc.conn, rc.br = c, bufio.NewReader(c)
	rc.dials++
	return nil
}

// head renders c's request head.
func (rc *rawClient) head(c *cell) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: matrix.test\r\nCookie: secret=head-bytes\r\nUser-Agent: matrix\r\n", c.method(), c.target())
	if c.route.auth && !c.noAuth {
		b.WriteString("Authorization: " + rc.auth + "\r\n")
	}
	if c.body >= 0 {
		b.WriteString("Content-Type: application/octet-stream\r\n")
		if c.unknown {
			b.WriteString("Transfer-Encoding: chunked\r\n")
		} else {
			b.WriteString("Content-Length: " + strconv.Itoa(c.body) + "\r\n")
		}
	}
	if c.expect {
		b.WriteString("Expect: 100-continue\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// frame returns body as it goes on the wire: as is, or chunked in random
// sizes (with an empty body, the last chunk alone).
func frame(c *cell, body []byte, rng *rand.Rand) []byte {
	if !c.unknown {
		return body
	}
	out := make([]byte, 0, len(body)+len(body)/16+64)
	for len(body) > 0 {
		n := min(len(body), 1+rng.IntN(maxPiece(len(body))))
		out = strconv.AppendInt(out, int64(n), 16)
		out = append(out, "\r\n"...)
		out = append(out, body[:n]...)
		out = append(out, "\r\n"...)
		body = body[n:]
	}
	return append(out, "0\r\n\r\n"...)
}

// maxPiece bounds the random pieces of n bytes so that there are a few
// dozen of them at most, and small ones for small n.
func maxPiece(n int) int { return max(16, n/24) }

// splits returns the sizes of the writes of n bytes: random, half of
// them tiny.
func splits(n int, rng *rand.Rand) []int {
	var out []int
	for n > 0 {
		k := 1 + rng.IntN(16)
		if rng.IntN(2) == 0 {
			k = 1 + rng.IntN(maxPiece(n))
		}
		k = min(k, n)
		out = append(out, k)
		n -= k
	}
	return out
}

// write sends b in the pieces a asks for; head is the length of the
// head at b's start (for head+body).
func write(w io.Writer, b []byte, head int, a arrival, rng *rand.Rand) error {
	var parts []int
	switch a {
	case whole:
		parts = []int{len(b)}
	case headBody:
		parts = []int{head, len(b) - head}
	case trickle:
		parts = splits(len(b), rng)
	}
	for i, n := range parts {
		if i > 0 && a == headBody {
			// Shaping arrival, not waiting for anything: give the loop
			// the head alone before the body follows.
			time.Sleep(2 * time.Millisecond)
		}
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// do sends c with body and reads its final response. The request's bytes
// go from a goroutine while the response is read, so that an answer
// before the body's end (or a large response) never deadlocks.
func (rc *rawClient) do(c *cell, body []byte) (outcome, error) {
	if rc.conn == nil {
		if err := rc.dial(); err != nil {
			return outcome{}, err
		}
	}
	conn := rc.conn
	_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	rng := rand.New(rand.NewPCG(c.seed, 7))
	head := rc.head(c)
	var msg []byte
	if c.body >= 0 {
		msg = frame(c, body, rng)
	}
	var o outcome
	written := make(chan error, 1)
	if c.expect {
		if _, err := conn.Write(head); err != nil {
			return o, fmt.Errorf("writing head: %w", err)
		}
		resp, err := rc.read(c, true)
		if err != nil {
			rc.close()
			return o, err
		}
		if resp.status != 100 && len(msg) == 0 {
			if resp.closed {
				rc.close()
			}
			return resp, nil // nothing was to follow the head
		}
		if resp.status != 100 {
			// A final answer before the body: the body is not sent, and
			// the server must say it closes (RFC 9110 section 10.1.1).
			if !resp.closed {
				return resp, errors.New("final response to Expect: 100-continue without Connection: close; the body's fate is unknown")
			}
			rc.close()
			return resp, nil
		}
		o.interim++
		go func() { written <- write(conn, msg, 0, pick(c.arrival, whole), rng) }()
	} else {
		all := append(head, msg...)
		go func() { written <- write(conn, all, len(head), c.arrival, rng) }()
	}
	resp, err := rc.read(c, false)
	resp.interim += o.interim
	if err != nil {
		rc.close()
		<-written
		return resp, err
	}
	if resp.closed {
		rc.close() // the server may close before the rest of the request is written
		<-written
		return resp, nil
	}
	if err := <-written; err != nil {
		rc.close()
		return resp, fmt.Errorf("writing request (the response kept the connection): %w", err)
	}
	return resp, nil
}

// pick maps head+body to another arrival where there is no head to send.
func pick(a, instead arrival) arrival {
	if a == headBody {
		return instead
	}
	return a
}

// read reads one response with its body, skipping 1xx responses; when
// interim is set, a 100 is returned (status 100, no body) instead.
func (rc *rawClient) read(c *cell, interim bool) (outcome, error) {
	var o outcome
	for {
		resp, err := http.ReadResponse(rc.br, &http.Request{Method: c.method()})
		if err != nil {
			return o, fmt.Errorf("reading response: %w", err)
		}
		if resp.StatusCode == 100 && interim {
			o.status = 100
			return o, nil
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			o.interim++
			continue
		}
		return fill(o, resp)
	}
}

// fill completes o from a final response, reading and closing its body.
func fill(o outcome, resp *http.Response) (outcome, error) {
	defer resp.Body.Close()
	o.status = resp.StatusCode
	o.got = resp.Header.Get("X-Got")
	o.location = resp.Header.Get("Location")
	o.closed = resp.Close
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	o.body = n
	copy(o.sum[:], h.Sum(nil))
	if err != nil {
		return o, fmt.Errorf("reading response body after %d bytes: %w", n, err)
	}
	return o, nil
}

// requestTimeout bounds each request of the matrix, from its first byte
// to its response's last.
var requestTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("GALE_MATRIX_TIMEOUT")); err == nil {
		return d
	}
	return 60 * time.Second
}()
