package app

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"gale/config"
)

// readUntilEnd reads frames until every stream in want ended, answering
// SETTINGS, and returns the order in which streams ended and each
// stream's body.
func (hc *h2Client) readUntilEnd(want ...uint32) (order []uint32, bodies map[uint32][]byte) {
	bodies = map[uint32][]byte{}
	left := map[uint32]bool{}
	for _, id := range want {
		left[id] = true
	}
	for len(left) > 0 {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			hc.t.Fatalf("reading: %v (streams %v still open)", err, left)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = hc.fr.WriteSettingsAck()
			}
		case *http2.DataFrame:
			id := f.StreamID
			bodies[id] = append(bodies[id], f.Data()...)
			if n := uint32(len(f.Data())); n > 0 {
				_ = hc.fr.WriteWindowUpdate(0, n)
				_ = hc.fr.WriteWindowUpdate(id, n)
			}
			if f.StreamEnded() {
				order = append(order, id)
				delete(left, id)
			}
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				order = append(order, f.StreamID)
				delete(left, f.StreamID)
			}
		case *http2.GoAwayFrame:
			hc.t.Fatalf("unexpected GOAWAY %v (last stream %d, %q)", f.ErrCode, f.LastStreamID, f.DebugData())
		case *http2.RSTStreamFrame:
			hc.t.Fatalf("unexpected RST_STREAM %v on stream %d", f.ErrCode, f.StreamID)
		}
	}
	return order, bodies
}

// TestH2Fairness downloads a 64 MiB file on one stream and meanwhile asks
// for small responses on the same connection: every small response ends
// before the download does (the download gets one frame per round).
func TestH2Fairness(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	if err := os.WriteFile(filepath.Join(ts.dir, "site", "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0)
	if err := hc.fr.WriteWindowUpdate(0, 1<<30); err != nil {
		t.Fatal(err)
	}
	down := hc.get("/big.bin")
	// Wait for the download to be under way.
	for got := 0; got < 1<<20; {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
			_ = hc.fr.WriteWindowUpdate(down, uint32(len(d.Data())))
		}
	}
	var small []uint32
	for i := 0; i < 20; i++ {
		small = append(small, hc.get("/hello"))
	}
	order, bodies := hc.readUntilEnd(append([]uint32{down}, small...)...)
	if order[len(order)-1] != down {
		t.Fatalf("the download ended before small responses: %v", order)
	}
	for _, id := range small {
		if string(bodies[id]) != "hello\n" {
			t.Fatalf("stream %d: %q", id, bodies[id])
		}
	}
}

// TestH2ByteAtATime delivers a whole h2c session one byte per write.
func TestH2ByteAtATime(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings()
	_ = fr.WriteSettingsAck()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	var ids []uint32
	for i, path := range []string{"/hello", "/small.txt", "/hello"} {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		ids = append(ids, id)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	}
	c, err := net.DialTimeout("tcp", ts.plainAddr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	// Every byte is written before any frame is read: readUntilEnd
	// answers DATA with WINDOW_UPDATE frames, which written meanwhile
	// would land inside the frames still trickling out. The answers are a
	// few hundred bytes, which the socket buffers hold.
	for _, b := range buf.Bytes() {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	hc := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c)}
	_, bodies := hc.readUntilEnd(ids...)
	if string(bodies[1]) != "hello\n" || string(bodies[3]) != "0123456789" || string(bodies[5]) != "hello\n" {
		t.Fatalf("bodies %q %q %q", bodies[1], bodies[3], bodies[5])
	}
}

// TestH2Load runs h2load (nghttp2-client) over TLS and h2c: 100 streams
// at once on each of 4 connections, every request a success.
func TestH2Load(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("h2load")
	if err != nil {
		t.Skip("h2load not installed (apt-get install nghttp2-client)")
	}
	ts := h2Server(t, nil)
	for name, url := range map[string]string{
		"tls": "https://" + ts.tlsAddr + "/small.txt",
		"h2c": "http://" + ts.plainAddr() + "/hello",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, bin, "-n", "4000", "-c", "4", "-m", "100", url).CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "4000 succeeded, 0 failed, 0 errored") ||
			!strings.Contains(string(out), "Application protocol: h2") {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
}

// TestH2ReloadNewStreams reloads the config while an HTTP/2 connection is
// open: the next stream on that connection is answered by the new routes.
func TestH2ReloadNewStreams(t *testing.T) {
	t.Parallel()
	ts := h2Server(t, nil)
	hc := dialH2C(t, ts.plainAddr(), 1<<20, 0)
	id := hc.get("/hello")
	if _, b := hc.readUntilEnd(id); string(b[id]) != "hello\n" {
		t.Fatalf("before: %q", b[id])
	}
	text := strings.Replace(h2Site, `body: "hello\n"`, `body: "reloaded\n"`, 1)
	text = strings.ReplaceAll(text, "$CERT", "{cert: cert.pem, key: cert.key}")
	file := filepath.Join(ts.dir, "gale.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.srv.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	id = hc.get("/hello")
	if _, b := hc.readUntilEnd(id); string(b[id]) != "reloaded\n" {
		t.Fatalf("after: %q", b[id])
	}
}
