package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// respondBody is the fixed body of the respond workload.
const respondBody = "hello world\n"

// fixture is one file the servers serve.
type fixture struct {
	Name   string `json:"name"`   // file name under the fixture root
	Size   int    `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // of the content (decoded, for the .gz sidecar's source)
}

// fixtureSet is the generated document root.
type fixtureSet struct {
	Root  string             `json:"root"`  // absolute directory
	Files map[string]fixture `json:"files"` // by name
	data  map[string][]byte  // contents, for the upstream
}

// workload is one measured request pattern.
type workload struct {
	ID      string // stable identifier used in flags, tables and JSON
	Path    string // request path
	Fixture string // fixture whose content the decoded body must equal
	Gzip    bool   // send Accept-Encoding: gzip and expect Content-Encoding: gzip
	Close   bool   // send Connection: close on every request
	Idle    int    // idle keep-alive connections held open during the load
	Proxy   bool   // served through the reverse proxy from the upstream
	TLSUp   bool   // Proxy to the upstream's TLS 1.3 listener, kept alive
	UpChurn bool   // with TLSUp: no upstream connection is kept, each request dials (and resumes a TLS session)
	// Cache (with Proxy) is a proxy route with the server's shared HTTP
	// cache in front of it, on the upstream's /cached/ paths
	// (Cache-Control: max-age=3600): after the first request every one is
	// a hit.
	Cache   bool
	Respond bool // a fixed response configured in the server
	PHP     bool // a PHP script run by the harness's PHP-FPM pool (php.go)
	// RateLimit is the scope of gale's rate_limit on the route, "local" or
	// "cluster" (ratelimit.go); such a workload is gale's alone.
	RateLimit string
	// Proto is how the load is driven: "" is HTTP/1.1 over cleartext with
	// wrk; "h2" is HTTP/2 over TLS 1.3 and "h2c" HTTP/2 over cleartext with
	// prior knowledge, both with h2load.
	Proto string
	Desc  string // one line for the report
	// Custom marks the user's own request mix (sweep -url/-access-log):
	// Mix holds its paths, and responses are checked by status only.
	Custom bool
	Mix    []weightedPath
}

// h2 reports whether the workload is HTTP/2 (driven by h2load).
func (w workload) h2() bool { return w.Proto != "" }

// scheme is the URL scheme of the workload's requests.
func (w workload) scheme() string {
	if w.Proto == "h2" {
		return "https"
	}
	return "http"
}

// allWorkloads lists every workload in report order.
var allWorkloads = []workload{
	{ID: "static-14", Path: "/s14.txt", Fixture: "s14.txt", Desc: "static file, 14 B (Hello, World!)"},
	{ID: "static-128", Path: "/s128.bin", Fixture: "s128.bin", Desc: "static file, 128 B"},
	{ID: "static-1k", Path: "/s1k.bin", Fixture: "s1k.bin", Desc: "static file, 1 KiB"},
	{ID: "static-16k", Path: "/s16k.bin", Fixture: "s16k.bin", Desc: "static file, 16 KiB"},
	{ID: "static-64k", Path: "/s64k.bin", Fixture: "s64k.bin", Desc: "static file, 64 KiB"},
	{ID: "static-1m", Path: "/s1m.bin", Fixture: "s1m.bin", Desc: "static file, 1 MiB"},
	{ID: "gzip-js", Path: "/app.js", Fixture: "app.js", Gzip: true, Desc: "120 KiB JavaScript, Accept-Encoding: gzip (precompressed .gz or cached)"},
	{ID: "respond", Path: "/respond", Fixture: "respond", Respond: true, Desc: "fixed 12 B response configured in the server"},
	{ID: "proxy-128", Path: "/proxy/s128.bin", Fixture: "s128.bin", Proxy: true, Desc: "reverse proxy to the upstream, 128 B body"},
	{ID: "proxy-16k", Path: "/proxy/s16k.bin", Fixture: "s16k.bin", Proxy: true, Desc: "reverse proxy to the upstream, 16 KiB body"},
	{ID: "proxy-tls-128", Path: "/proxy/s128.bin", Fixture: "s128.bin", Proxy: true, TLSUp: true, Desc: "reverse proxy to the upstream over TLS 1.3, kept alive, 128 B body"},
	{ID: "proxy-tls-16k", Path: "/proxy/s16k.bin", Fixture: "s16k.bin", Proxy: true, TLSUp: true, Desc: "reverse proxy to the upstream over TLS 1.3, kept alive, 16 KiB body"},
	{ID: "proxy-tls-churn-128", Path: "/proxy/s128.bin", Fixture: "s128.bin", Proxy: true, TLSUp: true, UpChurn: true, Desc: "reverse proxy to the upstream over TLS 1.3, a new upstream connection per request (TLS session resumption), 128 B body"},
	{ID: "pcache-128", Path: cachedPrefix + "s128.bin", Fixture: "s128.bin", Proxy: true, Cache: true, Desc: "cached proxied response (shared HTTP cache hit), 128 B body"},
	{ID: "pcache-16k", Path: cachedPrefix + "s16k.bin", Fixture: "s16k.bin", Proxy: true, Cache: true, Desc: "cached proxied response (shared HTTP cache hit), 16 KiB body"},
	{ID: "churn-128", Path: "/s128.bin", Fixture: "s128.bin", Close: true, Desc: "static 128 B with Connection: close on every request"},
	{ID: "idle1000-128", Path: "/s128.bin", Fixture: "s128.bin", Idle: 1000, Desc: "static 128 B while 1000 idle keep-alive connections are held open"},
	{ID: "h2-static-128", Path: "/s128.bin", Fixture: "s128.bin", Proto: "h2", Desc: "HTTP/2 over TLS 1.3, static file, 128 B"},
	{ID: "h2-static-16k", Path: "/s16k.bin", Fixture: "s16k.bin", Proto: "h2", Desc: "HTTP/2 over TLS 1.3, static file, 16 KiB"},
	{ID: "h2-respond", Path: "/respond", Fixture: "respond", Respond: true, Proto: "h2", Desc: "HTTP/2 over TLS 1.3, fixed 12 B response configured in the server"},
	{ID: "h2c-respond", Path: "/respond", Fixture: "respond", Respond: true, Proto: "h2c", Desc: "HTTP/2 over cleartext (prior knowledge), fixed 12 B response"},
	{ID: "h2-proxy-128", Path: "/proxy/s128.bin", Fixture: "s128.bin", Proxy: true, Proto: "h2", Desc: "HTTP/2 over TLS 1.3, reverse proxy to the HTTP/1.1 upstream, 128 B body"},
	{ID: "h2-pcache-128", Path: cachedPrefix + "s128.bin", Fixture: "s128.bin", Proxy: true, Cache: true, Proto: "h2", Desc: "HTTP/2 over TLS 1.3, cached proxied response (shared HTTP cache hit), 128 B body"},
	{ID: "h2-pcache-16k", Path: cachedPrefix + "s16k.bin", Fixture: "s16k.bin", Proxy: true, Cache: true, Proto: "h2", Desc: "HTTP/2 over TLS 1.3, cached proxied response (shared HTTP cache hit), 16 KiB body"},
	{ID: "h2-proxy-16k", Path: "/proxy/s16k.bin", Fixture: "s16k.bin", Proxy: true, Proto: "h2", Desc: "HTTP/2 over TLS 1.3, reverse proxy to the HTTP/1.1 upstream, 16 KiB body"},
}

// findWorkload returns the workload with this ID.
func findWorkload(id string) (workload, bool) {
	for _, w := range knownWorkloads() {
		if w.ID == id {
			return w, true
		}
	}
	return workload{}, false
}

// fixtureSizes are the binary files, by name.
var fixtureSizes = []struct {
	name string
	size int
}{
	{"s128.bin", 128}, {"s1k.bin", 1 << 10}, {"s16k.bin", 16 << 10}, {"s64k.bin", 64 << 10}, {"s1m.bin", 1 << 20},
}

// jsSize is the size of the gzip-js fixture (120 KiB).
const jsSize = 120 << 10

// genJS returns deterministic JavaScript of exactly n bytes that compresses
// roughly like real minified-then-formatted code.
func genJS(n int) []byte {
	r := rand.New(rand.NewPCG(7, 11))
	words := []string{"state", "value", "index", "render", "update", "node", "child", "props", "event",
		"handler", "config", "result", "buffer", "length", "offset", "cache", "entry", "count", "width", "height"}
	ops := []string{" + ", " - ", " * ", " | ", " & ", " ^ ", " >> "}
	var b bytes.Buffer
	b.WriteString("/* bench fixture: generated JavaScript */\n'use strict';\n")
	for i := 0; b.Len() < n; i++ {
		w1, w2, w3 := words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))]
		switch r.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "function %s%d(%s, %s) {\n  return (%s%s%d)%s%s.%s;\n}\n", w1, i, w2, w3, w2, ops[r.IntN(len(ops))], r.IntN(1<<16), ops[r.IntN(len(ops))], w3, w1)
		case 1:
			fmt.Fprintf(&b, "const %s_%x = { %s: %d, %s: '%s%d', %s: [%d, %d, %d] };\n", w1, r.Uint32(), w2, r.IntN(1000), w3, w1, r.IntN(99), w1, r.IntN(256), r.IntN(256), r.IntN(256))
		case 2:
			fmt.Fprintf(&b, "if (%s.%s > %d) { %s.%s(%s, %d); } else { %s = %s%s%d; }\n", w1, w2, r.IntN(4096), w3, w1, w2, r.IntN(64), w2, w3, ops[r.IntN(len(ops))], r.IntN(1<<20))
		default:
			fmt.Fprintf(&b, "for (let i = 0; i < %s.%s; i++) { %s[i] = %s(%s[i], 0x%04x); }\n", w1, w2, w3, w1, w2, r.IntN(1<<16))
		}
	}
	out := b.Bytes()[:n]
	out[n-1] = '\n'
	return out
}

// genBinary returns n deterministic pseudo-random bytes (incompressible).
func genBinary(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			out[i+j] = byte(v >> (8 * j))
		}
	}
	return out
}

// sha256Hex returns the hex SHA-256 of b.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// gzipBytes compresses b at the best level.
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeFixtures generates the document root under dir (created if
// needed): the static files, the JavaScript file with its .gz sidecar,
// and the file lighttpd serves for the respond workload. Contents are the
// same on every run, so hashes compare across runs.
func writeFixtures(dir string) (*fixtureSet, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	fs := &fixtureSet{Root: root, Files: map[string]fixture{}, data: map[string][]byte{}}
	add := func(name string, b []byte) error {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			return err
		}
		fs.Files[name] = fixture{Name: name, Size: len(b), SHA256: sha256Hex(b)}
		fs.data[name] = b
		return nil
	}
	if err := add("s14.txt", []byte("Hello, World!\n")); err != nil {
		return nil, err
	}
	for i, f := range fixtureSizes {
		if err := add(f.name, genBinary(f.size, uint64(i+1))); err != nil {
			return nil, err
		}
	}
	js := genJS(jsSize)
	if err := add("app.js", js); err != nil {
		return nil, err
	}
	gz, err := gzipBytes(js)
	if err != nil {
		return nil, err
	}
	if err := add("app.js.gz", gz); err != nil {
		return nil, err
	}
	if err := add("respond", []byte(respondBody)); err != nil {
		return nil, err
	}
	if err := writePHPFixtures(fs, add); err != nil {
		return nil, err
	}
	return fs, nil
}

// parseWorkloads resolves a comma-separated list of workload IDs ("all" or
// "" means every workload).
func parseWorkloads(s string) ([]workload, error) {
	if s == "" || s == "all" {
		return allWorkloads, nil
	}
	var out []workload
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		w, ok := findWorkload(id)
		if !ok {
			var ids []string
			for _, w := range knownWorkloads() {
				ids = append(ids, w.ID)
			}
			return nil, fmt.Errorf("unknown workload %q (known: %s)", id, strings.Join(ids, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}
