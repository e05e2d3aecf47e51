package proxy_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A minimal WebSocket (RFC 6455) for the tests: the handshake and
// unfragmented frames, enough to echo messages through the proxy.

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// writeFrame writes one final frame; clients mask, servers do not.
func writeFrame(w io.Writer, opcode byte, payload []byte, mask bool) error {
	var hdr []byte
	hdr = append(hdr, 0x80|opcode)
	m := byte(0)
	if mask {
		m = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, m|byte(n))
	case n < 1<<16:
		hdr = append(hdr, m|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, m|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	body := payload
	if mask {
		var key [4]byte
		rand.Read(key[:])
		hdr = append(hdr, key[:]...)
		body = make([]byte, len(payload))
		for i := range payload {
			body[i] = payload[i] ^ key[i%4]
		}
	}
	_, err := w.Write(append(hdr, body...))
	return err
}

// readFrame reads one frame and returns its opcode and unmasked payload.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	if masked {
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return h[0] & 0x0f, p, nil
}

// wsEchoUpstream accepts WebSocket handshakes and echoes every message
// until a close frame.
func wsEchoUpstream(t *testing.T) *rawUpstream {
	return newRawUpstream(t, wsEcho)
}

// wsEcho serves one WebSocket connection c: the handshake, a greeting,
// then echoes until a close frame.
func wsEcho(c net.Conn) {
	{
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Accept: "+wsAccept(req.Header.Get("Sec-WebSocket-Key"))+"\r\n\r\n")
		// A greeting right behind the head, to check bytes that come
		// with the 101 are relayed too.
		writeFrame(c, 1, []byte("welcome"), false)
		for {
			op, p, err := readFrame(br)
			if err != nil {
				return
			}
			if op == 8 {
				writeFrame(c, 8, p, false)
				return
			}
			if writeFrame(c, op, p, false) != nil {
				return
			}
		}
	}
}

// TestWebSocketEcho upgrades through the proxy and echoes messages, small
// and large, both ways until the client closes.
func TestWebSocketEcho(t *testing.T) {
	t.Parallel()
	up := wsEchoUpstream(t)
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	rc.send("GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) ||
		!strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") || !strings.EqualFold(resp.Header.Get("Connection"), "upgrade") {
		t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	if op, p, err := readFrame(rc.br); err != nil || op != 1 || string(p) != "welcome" {
		t.Fatalf("greeting: %d %q %v", op, p, err)
	}
	big := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB: several socket buffers
	for _, msg := range [][]byte{[]byte("hello"), []byte(strings.Repeat("x", 300)), big, []byte("bye")} {
		if err := writeFrame(rc.c, 2, msg, true); err != nil {
			t.Fatal(err)
		}
		op, p, err := readFrame(rc.br)
		if err != nil || op != 2 || !bytes.Equal(p, msg) {
			t.Fatalf("echo of %d bytes: op %d, %d bytes, %v", len(msg), op, len(p), err)
		}
	}
	if err := writeFrame(rc.c, 8, []byte{3, 232}, true); err != nil {
		t.Fatal(err)
	}
	if op, _, err := readFrame(rc.br); err != nil || op != 8 {
		t.Fatalf("close: op %d %v", op, err)
	}
	// The upstream closed its side: the tunnel ends and the client sees
	// the connection close.
	_ = rc.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := rc.br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after close: %d bytes, %v; want EOF", n, err)
	}
	if s := g.srv.ProxyStats(); s.Tunnels != 1 {
		t.Errorf("tunnels %d", s.Tunnels)
	}
}

// TestUpgradeRefused relays a refusal of an upgrade as an ordinary
// response, and a 101 the client never asked for is a 502.
func TestUpgradeRefused(t *testing.T) {
	t.Parallel()
	up := wsEchoUpstream(t)
	g := startGale(t, proxyRoute(up.addr()))
	rc := g.dial()
	rc.send("GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 400 || resp.Close {
		t.Errorf("refused upgrade: %d close %v", resp.StatusCode, resp.Close)
	}
	// The client's connection carries on (a new upstream connection
	// serves the next request: this upstream closes after a refusal).
	rc.send("GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := rc.response("GET"); resp.StatusCode != 400 {
		t.Errorf("after a refused upgrade: %d", resp.StatusCode)
	}
	sneaky := newRawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		readHead(br)
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	})
	g2 := startGale(t, proxyRoute(sneaky.addr()))
	rc2 := g2.dial()
	rc2.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := rc2.response("GET"); resp.StatusCode != 502 {
		t.Errorf("unasked 101: %d", resp.StatusCode)
	}
}
