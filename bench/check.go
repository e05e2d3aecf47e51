package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// checkResult is one response check, made with Go's net/http client.
type checkResult struct {
	OK              bool   `json:"ok"`
	Error           string `json:"error,omitempty"`
	Status          int    `json:"status"`
	ContentEncoding string `json:"content_encoding"`
	WireBytes       int    `json:"wire_bytes"`
	WireSHA256      string `json:"wire_sha256"`
	BodySHA256      string `json:"body_sha256"` // after decoding Content-Encoding
	Server          string `json:"server_header,omitempty"`
	Proto           string `json:"proto,omitempty"`       // the response's protocol (HTTP/1.1, HTTP/2.0)
	TLSVersion      string `json:"tls_version,omitempty"` // of the connection, when it had TLS
}

// checkClient never decompresses on its own, so the check sees the
// Content-Encoding the server chose, and opens a fresh connection per
// check.
var checkClient = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{
		DisableCompression: true,
		DisableKeepAlives:  true,
		Proxy:              nil,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// checkResponse requests url as workload w does and verifies the status
// (200), the Content-Encoding (gzip for gzip workloads, none otherwise) and
// that the decoded body hashes to want.
func checkResponse(url string, w workload, want fixture) checkResult {
	return checkWith(checkClient, url, w, want)
}

// checkH2Response checks an HTTP/2 workload's response as checkResponse
// does, over HTTP/2 only: over TLS 1.3 offering only h2 in ALPN and
// trusting only the bench certificate ("h2"), or over cleartext with prior
// knowledge ("h2c"). A server that does not answer in HTTP/2 fails it.
func checkH2Response(url string, w workload, want fixture, cert *benchCert) checkResult {
	tr := &http.Transport{DisableCompression: true, Proxy: nil, TLSClientConfig: cert.clientConfig(), Protocols: new(http.Protocols)}
	if w.Proto == "h2c" {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP2(true)
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: checkClient.Timeout, Transport: tr, CheckRedirect: checkClient.CheckRedirect}
	return checkWith(client, url, w, want)
}

// checkWith makes the check of checkResponse with client.
func checkWith(client *http.Client, url string, w workload, want fixture) checkResult {
	var c checkResult
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	if w.Gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	req.Close = w.Close
	resp, err := client.Do(req)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	defer resp.Body.Close()
	c.Proto = resp.Proto
	if resp.TLS != nil {
		c.TLSVersion = tls.VersionName(resp.TLS.Version)
	}
	wire, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	c.Status = resp.StatusCode
	c.ContentEncoding = resp.Header.Get("Content-Encoding")
	c.Server = resp.Header.Get("Server")
	c.WireBytes = len(wire)
	c.WireSHA256 = sha256Hex(wire)
	if err != nil {
		c.Error = "reading body: " + err.Error()
		return c
	}
	body := wire
	if c.ContentEncoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(wire))
		if err != nil {
			c.Error = "gzip: " + err.Error()
			return c
		}
		if body, err = io.ReadAll(zr); err != nil {
			c.Error = "gzip: " + err.Error()
			return c
		}
	}
	c.BodySHA256 = sha256Hex(body)
	wantEnc := ""
	if w.Gzip {
		wantEnc = "gzip"
	}
	switch {
	case w.h2() && resp.ProtoMajor != 2:
		c.Error = fmt.Sprintf("answered in %s, want HTTP/2", c.Proto)
	case w.Proto == "h2" && (resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13):
		c.Error = fmt.Sprintf("TLS version %q, want TLS 1.3", c.TLSVersion)
	case c.Status != http.StatusOK:
		c.Error = fmt.Sprintf("status %d, want 200", c.Status)
	case c.ContentEncoding != wantEnc:
		c.Error = fmt.Sprintf("Content-Encoding %q, want %q", c.ContentEncoding, wantEnc)
	case c.BodySHA256 != want.SHA256:
		c.Error = fmt.Sprintf("body (%d bytes decoded) differs from fixture %s (%d bytes)", len(body), want.Name, want.Size)
	default:
		c.OK = true
	}
	return c
}

// errIdleResponse is returned when an idle connection's first request fails.
var errIdleResponse = errors.New("bench: idle connection: bad response")

// idleConns holds keep-alive connections open and idle during a
// measurement. Each has completed one request, so the server treats it as
// a keep-alive connection waiting for its next request.
type idleConns struct {
	conns  []net.Conn
	failed int    // connections that could not be opened or answered
	err    string // first failure
}

// openIdle opens n connections to addr, each after one GET of path.
func openIdle(addr, path string, n int) *idleConns {
	ic := &idleConns{}
	var mu sync.Mutex
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := openOneIdle(addr, path)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ic.failed++
				if ic.err == "" {
					ic.err = err.Error()
				}
				return
			}
			ic.conns = append(ic.conns, c)
		}()
	}
	wg.Wait()
	return ic
}

func openOneIdle(addr, path string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close || br.Buffered() != 0 {
		c.Close()
		return nil, fmt.Errorf("%w: status %d, close %v, err %v", errIdleResponse, resp.StatusCode, resp.Close, err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// alive counts the connections the server has not closed: a read that
// times out means the connection is still open and idle.
func (ic *idleConns) alive() int {
	n := 0
	var buf [1]byte
	for _, c := range ic.conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.Read(buf[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			n++
		}
	}
	return n
}

// close closes every held connection.
func (ic *idleConns) close() {
	for _, c := range ic.conns {
		c.Close()
	}
}
