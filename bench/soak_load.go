package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// soakKind is one kind of exchange in the mixed load: it runs one
// exchange and checks every byte of the answer.
type soakKind struct {
	name   string
	weight int // share of the rate
	run    func(l *soakLoad) error
	long   bool // takes seconds by design (a slow reader): left out of the p99
}

// soakLoad is the load generator: a fixed rate of exchanges picked by
// weight, the idle connections, and the counts.
type soakLoad struct {
	env   *soakEnv
	o     *soakOptions
	kinds []soakKind
	plan  []int // kind indexes, one per weight unit, in a fixed shuffled order

	keep    *http.Client // HTTP/1.1 keep-alive
	tlsKeep *http.Client // HTTP/1.1 over TLS, resuming
	h2      *http.Client // HTTP/2 over TLS
	h2c     *http.Client // HTTP/2 cleartext

	mu       sync.Mutex
	errs     map[string]int
	examples map[string]string
	counts   map[string]int
	lat      []time.Duration // latencies of the current sample window

	done  atomic.Int64 // exchanges finished (each request of a pipelined batch counts)
	idle  []net.Conn
	slots chan struct{} // bounds the exchanges in flight
}

func newSoakLoad(env *soakEnv, o *soakOptions) *soakLoad {
	l := &soakLoad{env: env, o: o, errs: map[string]int{}, examples: map[string]string{}, counts: map[string]int{},
		slots: make(chan struct{}, 256)}
	l.keep = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}
	l.tlsKeep = &http.Client{Transport: &http.Transport{TLSClientConfig: env.tlsConf, MaxIdleConnsPerHost: 8, ForceAttemptHTTP2: false,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}, Timeout: 30 * time.Second}
	h2conf := env.tlsConf.Clone()
	h2conf.NextProtos = []string{"h2"}
	l.h2 = &http.Client{Transport: &http2.Transport{TLSClientConfig: h2conf}, Timeout: 30 * time.Second}
	l.h2c = &http.Client{Transport: &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}, Timeout: 30 * time.Second}
	l.kinds = soakKinds(o.h2WithProxy)
	for i, k := range l.kinds {
		for range k.weight {
			l.plan = append(l.plan, i)
		}
	}
	for i := range l.plan { // a fixed interleaving, so kinds are spread evenly
		j := (i * 7919) % len(l.plan)
		l.plan[i], l.plan[j] = l.plan[j], l.plan[i]
	}
	return l
}

// soakKinds is the mix. Weights are per 100 exchanges, roughly.
func soakKinds(h2 bool) []soakKind {
	ks := []soakKind{
		{"h1-keepalive", 24, soakGet(false, 1, "/small.txt"), false},
		{"h1-pipelined", 8, (*soakLoad).pipelined, false},
		{"h1-one-request", 8, (*soakLoad).oneRequest, false},
		{"tls-full-handshake", 4, (*soakLoad).tlsFull, false},
		{"tls-resumed", 8, soakGet(true, 1, "/mid.bin"), false},
		{"proxy-keepalive", 20, soakGet(false, 1, "/up/echo-get"), false},
		{"proxy-upload", 4, (*soakLoad).upload, false},
		{"proxy-slow-download", 1, (*soakLoad).slowDownload, true},
		{"static-large", 1, soakGet(false, 1, "/large.bin"), false},
		{"websocket-echo", 2, (*soakLoad).websocket, false},
	}
	if h2 {
		ks = append(ks, soakKind{"h2-tls", 12, soakGet(true, 2, "/mid.bin"), false}, soakKind{"h2c", 8, soakGet(false, 2, "/small.txt"), false},
			soakKind{"h2-proxy", 8, soakGet(true, 2, "/up/echo-get"), false})
	}
	return ks
}

// run starts exchanges at the fixed rate until stop; each runs in its own
// goroutine, at most cap(slots) at once (a slot taken means the load fell
// behind: that is counted as an error, not queued).
func (l *soakLoad) run(stop <-chan struct{}) {
	interval := time.Second / time.Duration(l.o.rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		select {
		case <-stop:
			wg.Wait()
			return
		case <-tick.C:
		}
		k := l.kinds[l.plan[i%len(l.plan)]]
		select {
		case l.slots <- struct{}{}:
		default:
			l.fail("load-behind", fmt.Errorf("%d exchanges in flight", cap(l.slots)))
			continue
		}
		wg.Go(func() {
			defer func() { <-l.slots }()
			start := time.Now()
			err := k.run(l)
			l.finish(k, time.Since(start), err)
		})
	}
}

func (l *soakLoad) finish(k soakKind, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[k.name]++
	if err != nil {
		l.errs[k.name]++
		if _, ok := l.examples[k.name]; !ok {
			l.examples[k.name] = err.Error()
		}
		return
	}
	if !k.long {
		l.lat = append(l.lat, d)
	}
}

// fail counts an error of something other than an exchange.
func (l *soakLoad) fail(kind string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[kind]++
	if _, ok := l.examples[kind]; !ok {
		l.examples[kind] = err.Error()
	}
}

func (l *soakLoad) errorCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.errs {
		n += v
	}
	return n
}

func (l *soakLoad) errorsByKind() map[string]soakError {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]soakError{}
	for k, n := range l.errs {
		out[k] = soakError{Count: n, Example: l.examples[k]}
	}
	return out
}

func (l *soakLoad) countsByKind() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.counts))
	for k, v := range l.counts {
		out[k] = v
	}
	return out
}

// window returns the p99 latency of the exchanges since the last call.
func (l *soakLoad) window() time.Duration {
	l.mu.Lock()
	lat := l.lat
	l.lat = nil
	l.mu.Unlock()
	if len(lat) == 0 {
		return 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[min(len(lat)-1, len(lat)*99/100)]
}

// checkBody compares a response with what the path serves.
func checkBody(resp *http.Response, err error, want []byte, proto int) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if resp.StatusCode != 200 || !bytes.Equal(got, want) {
		return fmt.Errorf("status %d, %d bytes (want %d, equal %v)", resp.StatusCode, len(got), len(want), bytes.Equal(got, want))
	}
	if proto != 0 && resp.ProtoMajor != proto {
		return fmt.Errorf("spoke %s, want HTTP/%d", resp.Proto, proto)
	}
	return nil
}

func (l *soakLoad) get(c *http.Client, base, path string, want []byte, proto int) error {
	resp, err := c.Get(base + path)
	err = checkBody(resp, err, want, proto)
	l.done.Add(1)
	return err
}

// soakGet is a kind that GETs path over TLS or not, speaking HTTP/proto,
// and checks the answer against what path serves: a file of the root,
// or the upstream's body under /up/.
func soakGet(overTLS bool, proto int, path string) func(l *soakLoad) error {
	return func(l *soakLoad) error {
		base := "http://" + l.env.plain
		if overTLS {
			base = "https://" + l.env.tlsAddr
		}
		want := l.env.files[path]
		if strings.HasPrefix(path, "/up/") {
			want = soakUpstreamBody
		}
		return l.get(l.client(overTLS, proto), base, path, want, proto)
	}
}

// client is the kept client for TLS or cleartext and HTTP/1.1 or HTTP/2.
func (l *soakLoad) client(overTLS bool, proto int) *http.Client {
	switch {
	case overTLS && proto == 2:
		return l.h2
	case overTLS:
		return l.tlsKeep
	case proto == 2:
		return l.h2c
	}
	return l.keep
}

// tlsFull opens a connection with a fresh session cache: a full
// handshake every time.
func (l *soakLoad) tlsFull() error {
	conf := l.env.cert.clientConfig()
	conf.NextProtos = []string{"http/1.1"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", l.env.tlsAddr, conf)
	if err != nil {
		return err
	}
	defer c.Close()
	return l.respondOnce(c)
}

// oneRequest opens a plain connection for one request.
func (l *soakLoad) oneRequest() error { return l.onPlain(l.respondOnce) }

// respondOnce asks c for /respond and for the connection's close.
func (l *soakLoad) respondOnce(c net.Conn) error {
	return l.rawExchange(c, "GET /respond HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", []byte("soak\n"), 1)
}

// pipelined sends three requests in one write and reads three answers.
func (l *soakLoad) pipelined() error {
	return l.onPlain(func(c net.Conn) error {
		req := "GET /respond HTTP/1.1\r\nHost: x\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /up/echo-get HTTP/1.1\r\nHost: x\r\n\r\n"
		return l.rawExchange(c, req, []byte("soak\n"), 3, l.env.files["/small.txt"], soakUpstreamBody)
	})
}

// onPlain runs f on a new plain connection, closed after it.
func (l *soakLoad) onPlain(f func(c net.Conn) error) error {
	c, err := net.DialTimeout("tcp", l.env.plain, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// rawExchange writes req and checks n responses, the i-th against
// wants[i] (the last want repeats).
func (l *soakLoad) rawExchange(c net.Conn, req string, first []byte, n int, more ...[]byte) error {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	wants := append([][]byte{first}, more...)
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err := checkBody(resp, err, wants[min(i, len(wants)-1)], 1); err != nil {
			return fmt.Errorf("response %d of %d: %w", i+1, n, err)
		}
		l.done.Add(1)
	}
	return nil
}

// upload posts 256 KiB to the upstream, which answers its SHA-1.
func (l *soakLoad) upload() error {
	body := patternBytes(256<<10, 9)
	resp, err := l.keep.Post("http://"+l.env.plain+"/up/sha1", "application/octet-stream", bytes.NewReader(body))
	sum := sha1.Sum(body)
	err = checkBody(resp, err, []byte(fmt.Sprintf("%x", sum)), 1)
	l.done.Add(1)
	return err
}

// slowDownload reads 8 MiB from the upstream at about 2 MB/s.
func (l *soakLoad) slowDownload() error {
	resp, err := l.keep.Get("http://" + l.env.plain + "/up/large")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	h := sha1.New()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("after %d bytes: %w", n, err)
		}
		time.Sleep(time.Duration(k) * time.Second / (2 << 20))
	}
	l.done.Add(1)
	if resp.StatusCode != 200 || fmt.Sprintf("%x", h.Sum(nil)) != soakLargeSum {
		return fmt.Errorf("status %d, %d bytes, digest differs", resp.StatusCode, n)
	}
	return nil
}

// websocket upgrades through the proxy and echoes a message.
func (l *soakLoad) websocket() error {
	c, err := net.DialTimeout("tcp", l.env.plain, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	key := base64.StdEncoding.EncodeToString(patternBytes(16, byte(l.done.Load())))
	fmt.Fprintf(c, "GET /up/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", key)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != wsAccept(key) {
		return fmt.Errorf("upgrade: %d %q", resp.StatusCode, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	msg := []byte("soak echo " + key)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, msg) {
		return fmt.Errorf("echo: %q, %v", got, err)
	}
	l.done.Add(1)
	return nil
}

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// openIdle opens n keep-alive connections, each answered once, and holds
// them idle for the whole soak.
func (l *soakLoad) openIdle(n int) error {
	for i := range n {
		c, err := net.DialTimeout("tcp", l.env.plain, 10*time.Second)
		if err != nil {
			return fmt.Errorf("idle connection %d: %w", i, err)
		}
		if err := l.idleRequest(c); err != nil {
			c.Close()
			return fmt.Errorf("idle connection %d: %w", i, err)
		}
		l.idle = append(l.idle, c)
	}
	return nil
}

func (l *soakLoad) idleRequest(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "GET /respond HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	return checkBody(resp, err, []byte("soak\n"), 1)
}

// checkIdle sends one more request on every idle connection: all must
// still be open and served.
func (l *soakLoad) checkIdle() {
	for i, c := range l.idle {
		if err := l.idleRequest(c); err != nil {
			l.fail("idle-connection", fmt.Errorf("connection %d after the soak: %w", i, err))
		}
		c.Close()
	}
}

// soakUpstream is the upstream of the proxied kinds.
type soakUpstream struct {
	addr string
	srv  *http.Server
}

var (
	soakUpstreamBody = []byte(strings.Repeat("upstream ", 57))
	soakLarge        = patternBytes(8<<20, 11)
	soakLargeSum     = fmt.Sprintf("%x", sha1.Sum(soakLarge))
)

func startSoakUpstream() (*soakUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo-get", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(soakUpstreamBody) })
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(soakLarge) })
	mux.HandleFunc("/sha1", func(w http.ResponseWriter, r *http.Request) {
		h := sha1.New()
		_, _ = io.Copy(h, r.Body)
		fmt.Fprintf(w, "%x", h.Sum(nil))
	})
	mux.HandleFunc("/ws", wsEcho)
	u := &soakUpstream{addr: ln.Addr().String(), srv: &http.Server{Handler: mux}}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// wsEcho completes a WebSocket handshake and echoes bytes until the
// client closes (the load sends raw bytes through the tunnel).
func wsEcho(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	hj, ok := w.(http.Hijacker)
	if !ok || key == "" {
		http.Error(w, "no upgrade", 400)
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", wsAccept(key))
	_ = brw.Flush()
	_, _ = io.Copy(c, brw)
}

func (u *soakUpstream) close() { _ = u.srv.Close() }
