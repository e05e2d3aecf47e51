package main

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	paths := []weightedPath{{"/a", 5}, {"/b", 3}, {"/c", 1}}
	order := schedule(paths, 9*100)
	counts := map[uint16]int{}
	for i, p := range order {
		counts[p]++
		// Any window of one weight cycle holds each path in proportion.
		if (i+1)%9 == 0 {
			if counts[0]*3 != counts[1]*5 || counts[1] != counts[2]*3 {
				t.Fatalf("after %d: %v", i+1, counts)
			}
		}
	}
	if again := schedule(paths, 900); string(u16s(again)) != string(u16s(order)) {
		t.Error("schedule is not deterministic")
	}
	for _, p := range schedule([]weightedPath{{"/", 1}}, 10) {
		if p != 0 {
			t.Fatal("one path: index not 0")
		}
	}
}

func u16s(xs []uint16) []byte {
	var b []byte
	for _, x := range xs {
		b = append(b, byte(x), byte(x>>8))
	}
	return b
}

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, wire string
		status     int
		closeAfter bool
		err        bool
		rest       string // what must remain unread: the next response
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", 200, false, false, "NEXT"},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\nNEXT", 200, false, false, "NEXT"},
		{"304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\nNEXT", 304, false, false, "NEXT"},
		{"close", "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 404, true, false, ""},
		{"delimited by EOF", "HTTP/1.0 200 OK\r\n\r\nbody to the end", 200, true, false, ""},
		{"not HTTP", "SSH-2.0-x\r\n\r\n", 0, false, true, ""},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, false, true, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, false, true, ""},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, false, true, ""},
	}
	for _, tc := range tests {
		br := bufio.NewReader(strings.NewReader(tc.wire))
		status, closeAfter, err := readResponse(br)
		if (err != nil) != tc.err {
			t.Errorf("%s: err %v", tc.name, err)
			continue
		}
		if tc.err {
			continue
		}
		rest := make([]byte, 16)
		n, _ := br.Read(rest)
		if status != tc.status || closeAfter != tc.closeAfter || string(rest[:n]) != tc.rest {
			t.Errorf("%s: status %d close %v rest %q", tc.name, status, closeAfter, rest[:n])
		}
	}
}

func TestParsePathsAndRates(t *testing.T) {
	ps, err := parsePaths("/a=3, /b ,/c=d=2")
	if err != nil || len(ps) != 3 || ps[0] != (weightedPath{"/a", 3}) || ps[1] != (weightedPath{"/b", 1}) || ps[2] != (weightedPath{"/c=d", 2}) {
		t.Fatalf("%v %v", ps, err)
	}
	if formatPaths(ps) != "/a=3,/b=1,/c=d=2" {
		t.Errorf("format %q", formatPaths(ps))
	}
	for _, bad := range []string{"a", "/x=0", "/x y", ""} {
		if _, err := parsePaths(bad); err == nil {
			t.Errorf("parsePaths(%q) accepted", bad)
		}
	}
	rs, err := parseRates("20k, 5000,5000,1e4")
	if err != nil || len(rs) != 3 || rs[0] != 5000 || rs[1] != 10000 || rs[2] != 20000 {
		t.Fatalf("%v %v", rs, err)
	}
	for _, bad := range []string{"x", "-5", "0", "1e9"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted", bad)
		}
	}
}

// TestOpenLoopCounts runs the generator against a local server and checks
// its accounting: every due request is sent once, answered once, and the
// mix's paths arrive in their weights. Nothing here depends on timing
// (the per-request limit is far beyond what the run needs).
func TestOpenLoopCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var a, b, gz atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") == "gzip" && r.Host == "site.test" {
			gz.Add(1)
		}
		switch r.URL.Path {
		case "/a":
			a.Add(1)
			w.Write([]byte("hello"))
		case "/b":
			b.Add(1)
			w.WriteHeader(404)
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	res := runOpenLoop(openLoopSpec{Addr: ln.Addr().String(), Paths: []weightedPath{{"/a", 3}, {"/b", 1}}, Host: "site.test", Gzip: true,
		Rate: 2000, Duration: 100 * time.Millisecond, Connections: 4, Timeout: 30 * time.Second})
	if res.Due != 200 || res.Sent != 200 || res.Completed != 200 || res.Errors != 0 || res.Unfinished != 0 {
		t.Fatalf("due %d sent %d completed %d errors %d unfinished %d", res.Due, res.Sent, res.Completed, res.Errors, res.Unfinished)
	}
	if a.Load() != 150 || b.Load() != 50 || res.Non2xx != 50 || gz.Load() != 200 {
		t.Errorf("/a %d /b %d non-2xx %d gzip+host %d", a.Load(), b.Load(), res.Non2xx, gz.Load())
	}
	if res.Samples != 200 || res.LatencyUs["50"] <= 0 || res.LatencyUs["99.9"] < res.LatencyUs["50"] || res.ServiceUs["max"] > res.LatencyUs["max"] {
		t.Errorf("latencies %v service %v", res.LatencyUs, res.ServiceUs)
	}
	lr := res.loadResult()
	if lr.Requests != 200 || lr.Non2xx != 50 || lr.LatencyUs["99"] != res.LatencyUs["99"] {
		t.Errorf("loadResult %+v", lr)
	}
}

func TestSummarizeSamplesCorrected(t *testing.T) {
	// A 100 ms stall seen by a closed-loop tool as one slow request is,
	// from the intended send times, a ramp of late requests.
	var ss []sample
	for i := 0; i < 100; i++ {
		ss = append(ss, sample{latency: 100e3, service: 100e3})
	}
	for i := 0; i < 10; i++ {
		ss = append(ss, sample{latency: int64(100-10*i) * 1e6, service: 100e3, lag: int64(100-10*i) * 1e6})
	}
	lat, svc, _, _ := summarizeSamples(ss)
	if lat["99"] != 90e3 || svc["99"] != 100 || lat["50"] != 100 {
		t.Errorf("latency %v service %v", lat, svc)
	}
}
