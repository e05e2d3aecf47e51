package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
)

// upstreamCmd is the hidden subcommand that runs the proxy upstream.
const upstreamCmd = "_upstream"

// upstreamStatsPath answers with the upstream's counters as JSON.
const upstreamStatsPath = "/__stats"

// upstreamStats are the upstream's counters. Connections that only asked
// for the stats are not counted.
type upstreamStats struct {
	Conns         int64 `json:"conns"`          // connections that carried at least one request
	Requests      int64 `json:"requests"`       // requests answered (stats excluded)
	CloseRequests int64 `json:"close_requests"` // requests that asked to close (Connection: close, or HTTP/1.0 without keep-alive)
	// Handshakes on the TLS listener: full ones, and those that resumed a
	// session (a ticket).
	TLSFull    int64 `json:"tls_full,omitempty"`
	TLSResumed int64 `json:"tls_resumed,omitempty"`
}

// upstream is the fixed, fast origin server behind every proxy: a minimal
// HTTP/1.1 server that answers each GET of /NAME with the fixture NAME from
// memory. Keep-alive and pipelining are supported; request bodies are
// skipped by Content-Length. It is safe for concurrent use.
type upstream struct {
	heads map[string][]byte // path -> status line and headers, without the blank line
	files map[string][]byte // path -> body
	date  atomic.Pointer[[]byte]
	conns atomic.Int64
	reqs  atomic.Int64
	close atomic.Int64
	full  atomic.Int64 // TLS handshakes: full
	resum atomic.Int64 // TLS handshakes: resumed
}

// cachedPrefix is where the upstream serves every file again with
// Cache-Control: max-age=3600, so that a shared cache in front of it
// (the pcache workloads) stores the response.
const cachedPrefix = "/cached/"

// newUpstream builds an upstream serving files (name -> content) at /name,
// and at /cached/name with a freshness lifetime of an hour.
func newUpstream(files map[string][]byte) *upstream {
	u := &upstream{heads: map[string][]byte{}, files: map[string][]byte{}}
	for name, body := range files {
		p := "/" + name
		u.files[p] = body
		u.heads[p] = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nServer: bench-upstream\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n", len(body))
		c := cachedPrefix + name
		u.files[c] = body
		u.heads[c] = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nServer: bench-upstream\r\nContent-Type: application/octet-stream\r\nCache-Control: max-age=3600\r\nContent-Length: %d\r\n", len(body))
	}
	u.refreshDate()
	return u
}

func (u *upstream) refreshDate() {
	d := []byte("Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n")
	u.date.Store(&d)
}

// stats returns a snapshot of the counters.
func (u *upstream) stats() upstreamStats {
	return upstreamStats{Conns: u.conns.Load(), Requests: u.reqs.Load(), CloseRequests: u.close.Load(),
		TLSFull: u.full.Load(), TLSResumed: u.resum.Load()}
}

// serve accepts connections until ln is closed.
func (u *upstream) serve(ln net.Listener) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				u.refreshDate()
			case <-done:
				return
			}
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go u.handle(c)
	}
}

var (
	resp404 = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp400 = []byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp501 = []byte("HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
)

// handle serves one connection.
func (u *upstream) handle(c net.Conn) {
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if tc, ok := c.(*tls.Conn); ok {
		// Go sets TCP_NODELAY on the socket under it by default.
		if tc.Handshake() != nil {
			return
		}
		if tc.ConnectionState().DidResume {
			u.resum.Add(1)
		} else {
			u.full.Add(1)
		}
	}
	br := bufio.NewReaderSize(c, 16<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	defer bw.Flush()
	counted := false
	for {
		req, fail, ok := readUpstreamRequest(br)
		if !ok {
			if fail != nil {
				bw.Write(fail)
			}
			return
		}
		if req.chunked {
			bw.Write(resp501)
			return
		}
		if req.contentLength > 0 {
			if _, err := br.Discard(int(req.contentLength)); err != nil {
				return
			}
		}
		path := string(req.target)
		if i := bytes.IndexByte(req.target, '?'); i >= 0 {
			path = string(req.target[:i])
		}
		closing := req.connClose || (req.http10 && !req.keepAlive)
		if path == upstreamStatsPath {
			b, _ := json.Marshal(u.stats())
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(b), b)
			return
		}
		if !counted {
			counted = true
			u.conns.Add(1)
		}
		u.reqs.Add(1)
		if closing {
			u.close.Add(1)
		}
		if !u.respond(bw, &req, path, closing) || closing {
			return
		}
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

// upstreamRequest is what the upstream reads of a request's head.
type upstreamRequest struct {
	method, target []byte // alias the reader's buffer
	http10         bool
	contentLength  int64
	connClose      bool // Connection: close
	keepAlive      bool // Connection: keep-alive
	chunked        bool // any Transfer-Encoding
}

// readUpstreamRequest reads the head of a request from br. It reports
// false when the connection is to end, with the response to end it with
// (nil for none: the client went away).
func readUpstreamRequest(br *bufio.Reader) (req upstreamRequest, fail []byte, ok bool) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return req, nil, false
	}
	method, rest, ok1 := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
	target, version, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || !bytes.HasPrefix(version, []byte("HTTP/1.")) {
		return req, resp400, false
	}
	// Copied: reading the header lines may refill the reader's buffer,
	// which would overwrite the request line's bytes.
	kept := append(append(make([]byte, 0, len(method)+len(target)), method...), target...)
	req.method, req.target = kept[:len(method):len(method)], kept[len(method):]
	req.http10 = string(version) == "HTTP/1.0"
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return req, nil, false
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			return req, nil, true
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return req, resp400, false
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if req.contentLength, err = strconv.ParseInt(string(v), 10, 64); err != nil || req.contentLength < 0 {
				return req, resp400, false
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			req.chunked = true
		case bytes.EqualFold(k, []byte("Connection")):
			for _, tok := range bytes.Split(v, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				req.connClose = req.connClose || bytes.EqualFold(tok, []byte("close"))
				req.keepAlive = req.keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
			}
		}
	}
}

// respond writes the response to req for the file at path, saying when
// the connection closes after it and, to an HTTP/1.0 client, when it
// stays open. It reports false after a 404, which ends the connection.
func (u *upstream) respond(bw *bufio.Writer, req *upstreamRequest, path string, closing bool) bool {
	head, ok := u.heads[path]
	if !ok {
		bw.Write(resp404)
		return false
	}
	bw.Write(head)
	bw.Write(*u.date.Load())
	switch {
	case closing:
		bw.WriteString("Connection: close\r\n")
	case req.http10:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	bw.WriteString("\r\n")
	if string(req.method) != http.MethodHead {
		bw.Write(u.files[path])
	}
	return true
}

// upstreamMain runs the upstream as a process: `bench _upstream -listen
// ADDR -root DIR` serves every regular file of DIR.
func upstreamMain(args []string) int {
	fs := flag.NewFlagSet(upstreamCmd, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	root := fs.String("root", "", "directory whose regular files are served")
	tlsListen := fs.String("tls-listen", "", "address to serve the same files on over TLS 1.3 (with -cert and -key)")
	certFile := fs.String("cert", "", "PEM certificate of the TLS listener")
	keyFile := fs.String("key", "", "PEM private key of the TLS listener")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files, err := readDirFiles(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		return 1
	}
	fmt.Fprintln(os.Stdout, "upstream listening on", ln.Addr())
	u := newUpstream(files)
	if *tlsListen != "" {
		tln, err := listenTLS(*tlsListen, *certFile, *keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err)
			return 1
		}
		fmt.Fprintln(os.Stdout, "upstream listening over TLS on", tln.Addr())
		go func() {
			err := u.serve(tln)
			fmt.Fprintln(os.Stderr, "upstream: tls:", err)
			os.Exit(1)
		}()
	}
	err = u.serve(ln)
	fmt.Fprintln(os.Stderr, "upstream:", err)
	return 1
}

// listenTLS listens on addr for TLS 1.3 with the certificate in
// certFile and keyFile. Session tickets are crypto/tls's default (on), so
// clients that keep them resume.
func listenTLS(addr, certFile, keyFile string) (net.Listener, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}), nil
}

// readDirFiles reads every regular file directly under dir.
func readDirFiles(dir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = b
	}
	return files, nil
}

// fetchUpstreamStats asks the upstream at addr for its counters.
func fetchUpstreamStats(addr string) (upstreamStats, error) {
	var s upstreamStats
	resp, err := checkClient.Get("http://" + addr + upstreamStatsPath)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}
