package main

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// h2loadOK is h2load 1.52's output for a run against nginx over TLS.
const h2loadOK = `starting benchmark...
spawning thread #0: 5 total client(s). 1000 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
progress: 10% done
progress: 100% done

finished in 50.05ms, 19980.42 req/s, 2.39MB/s
requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 1000 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 122.31KB (125245) total, 101.56KB (104000) headers (space savings 40.23%), 2.93KB (3000) data
                     min         max         mean         sd        +/- sd
time for request:      116us      3.73ms      1.64ms       598us    78.40%
time for connect:     2.85ms      8.99ms      5.87ms      2.39ms    60.00%
time to 1st byte:     9.43ms     11.57ms     10.69ms      1.04ms    80.00%
req/s           :    4049.35     4472.62     4217.86      161.86    60.00%
`

// h2loadNoALPN is its output against a TLS server that refuses h2 in
// ALPN (gale before HTTP/2): no connection gets as far as a protocol.
const h2loadNoALPN = `starting benchmark...
spawning thread #0: 2 total client(s). 100 total requests

finished in 3.50ms, 0.00 req/s, 0B/s
requests: 100 total, 0 started, 0 done, 0 succeeded, 100 failed, 100 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 0B (0) total, 0B (0) headers (space savings 0.00%), 0B (0) data
                     min         max         mean         sd        +/- sd
time for request:        0us         0us         0us         0us     0.00%
time for connect:        0us         0us         0us         0us     0.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
req/s           :       0.00        0.00        0.00        0.00   100.00%
`

// h2loadH2cOnH1 is its output with prior knowledge against an HTTP/1.1
// server: h2load names h2c before it has sent a byte.
const h2loadH2cOnH1 = `starting benchmark...
spawning thread #0: 5 total client(s). 100 total requests
Application protocol: h2c

finished in 1.77ms, 0.00 req/s, 854.84KB/s
requests: 100 total, 50 started, 0 done, 0 succeeded, 100 failed, 100 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 0 5xx
`

func TestParseH2load(t *testing.T) {
	r, err := parseH2load(h2loadOK)
	if err != nil {
		t.Fatal(err)
	}
	want := h2loadResult{Requests: 1000, Started: 1000, Done: 1000, Succeeded: 1000, Status: [4]int64{1000, 0, 0, 0},
		DurationSec: 0.05005, ReqPerSec: 19980.42, Protocol: "h2", TLSVersion: "TLSv1.3", Cipher: "TLS_AES_128_GCM_SHA256",
		TempKey: "X25519 253 bits", RequestUs: h2Spread{116, 3730, 1640, 598}, ConnectUs: h2Spread{2850, 8990, 5870, 2390},
		FirstByteUs: h2Spread{9430, 11570, 10690, 1040}}
	if r.DurationSec < 0.05004 || r.DurationSec > 0.05006 {
		t.Errorf("duration %v", r.DurationSec)
	}
	r.DurationSec = want.DurationSec
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	r.LoggedCount = 1000
	if err := r.verify("h2"); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := parseH2load("h2load: connection refused\n"); !errors.Is(err, errH2loadOutput) {
		t.Errorf("garbage: %v", err)
	}
}

// TestH2loadVerify checks that a run is accepted only when it measured
// HTTP/2 of the wanted kind with every request a 2xx, and that a server
// without HTTP/2 is told apart from one that failed.
func TestH2loadVerify(t *testing.T) {
	ok, _ := parseH2load(h2loadOK)
	ok.LoggedCount = ok.Requests
	noALPN, _ := parseH2load(h2loadNoALPN)
	h2cOnH1, _ := parseH2load(h2loadH2cOnH1)
	mod := func(f func(*h2loadResult)) h2loadResult {
		r := ok
		f(&r)
		return r
	}
	tests := []struct {
		name  string
		r     h2loadResult
		proto string
		want  error
	}{
		{"no protocol over TLS", noALPN, "h2", errNoH2},
		{"h2c preface unanswered", h2cOnH1, "h2c", errNoH2},
		{"http/1.1 negotiated", mod(func(r *h2loadResult) { r.Protocol = "http/1.1" }), "h2", errNoH2},
		{"h2 where h2c wanted", ok, "h2c", errNoH2},
		{"some 404", mod(func(r *h2loadResult) { r.Status = [4]int64{990, 0, 10, 0} }), "h2", errH2Failed},
		{"3xx counted as success by h2load", mod(func(r *h2loadResult) { r.Status = [4]int64{999, 1, 0, 0} }), "h2", errH2Failed},
		{"errored", mod(func(r *h2loadResult) { r.Succeeded, r.Failed, r.Errored = 999, 1, 1 }), "h2", errH2Failed},
		{"log short", mod(func(r *h2loadResult) { r.LoggedCount = 999 }), "h2", errH2Failed},
		{"log non-2xx", mod(func(r *h2loadResult) { r.LoggedNon2xx = 1 }), "h2", errH2Failed},
	}
	for _, tt := range tests {
		if err := tt.r.verify(tt.proto); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := mod(func(r *h2loadResult) { r.TLSVersion = "TLSv1.2" }).verify("h2"); err == nil || !strings.Contains(err.Error(), "TLSv1.3") {
		t.Errorf("TLS 1.2 accepted: %v", err)
	}
}

func TestReadH2Log(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		status := "200"
		if i == 7 {
			status = "404"
		}
		b.WriteString("1796167475173546\t" + status + "\t" + itoa(i*10) + "\n")
	}
	p, n, non2xx, err := readH2Log(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n != 100 || non2xx != 1 {
		t.Errorf("n %d, non2xx %d", n, non2xx)
	}
	for k, want := range map[string]float64{"50": 500, "75": 750, "90": 900, "99": 990} {
		if p[k] != want {
			t.Errorf("p%s = %v, want %v", k, p[k], want)
		}
	}
	if _, _, _, err := readH2Log(strings.NewReader("1\t200\n")); !errors.Is(err, errH2loadOutput) {
		t.Errorf("short line: %v", err)
	}
	if p, n, _, err := readH2Log(strings.NewReader("")); err != nil || n != 0 || len(p) != 0 {
		t.Errorf("empty log: %v %d %v", p, n, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestH2loadArgs(t *testing.T) {
	got := strings.Join(h2loadArgs("/usr/bin/h2load", 1, 50, 10, 300000, "/tmp/log", "https://127.0.0.1:1/s128.bin"), " ")
	want := "/usr/bin/h2load -t 1 -c 50 -m 10 -n 300000 --npn-list=h2 --tls13-ciphers=TLS_AES_128_GCM_SHA256 --log-file=/tmp/log https://127.0.0.1:1/s128.bin"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
