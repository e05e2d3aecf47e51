package main

import (
	"errors"
	"reflect"
	"testing"
)

const wrkOK = `Running 1s test @ http://127.0.0.1:18181/a.txt
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   448.65us  226.42us   7.46ms   91.98%
    Req/Sec   135.03k     4.38k  141.99k    70.00%
  Latency Distribution
     50%  450.00us
     75%  486.00us
     90%  528.00us
     99%  772.00us
  133946 requests in 1.00s, 31.93MB read
Requests/sec: 133771.16
Transfer/sec:     31.89MB
`

const wrkErrors = `Running 2s test @ http://127.0.0.1:18181/nope
  2 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.86ms  526.48us    1.07s    65.37%
    Req/Sec    26.45k     5.41k   32.77k    45.45%
  Latency Distribution
     50%  770.00us
     75%    1.17ms
     90%    1.61s
     99%    2.00m
  28985 requests in 2.10s, 6.77MB read
  Socket errors: connect 1, read 22, write 3, timeout 4
  Non-2xx or 3xx responses: 144
Requests/sec:  13802.38
Transfer/sec:      6.15MB
`

func TestParseWrk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want wrkResult
	}{
		{"ok", wrkOK, wrkResult{
			Requests: 133946, DurationSec: 1, ReqPerSec: 133771.16,
			LatencyUs:    map[string]float64{"50": 450, "75": 486, "90": 528, "99": 772},
			LatencyAvgUs: 448.65, LatencyMaxUs: 7460,
		}},
		{"errors and units", wrkErrors, wrkResult{
			Requests: 28985, DurationSec: 2.1, ReqPerSec: 13802.38,
			LatencyUs:    map[string]float64{"50": 770, "75": 1170, "90": 1.61e6, "99": 120e6},
			LatencyAvgUs: 1860, LatencyMaxUs: 1.07e6,
			SockConnect: 1, SockRead: 22, SockWrite: 3, SockTimeout: 4, Non2xx: 144,
		}},
		{"no rate line", "  10 requests in 2.00s, 1KB read\n", wrkResult{
			Requests: 10, DurationSec: 2, ReqPerSec: 5, LatencyUs: map[string]float64{},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWrk(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want.LatencyUs {
				if !approx(got.LatencyUs[k], v) {
					t.Errorf("p%s = %v, want %v", k, got.LatencyUs[k], v)
				}
			}
			if len(got.LatencyUs) != len(tt.want.LatencyUs) {
				t.Errorf("percentiles %v, want %v", got.LatencyUs, tt.want.LatencyUs)
			}
			if !approx(got.DurationSec, tt.want.DurationSec) || !approx(got.LatencyAvgUs, tt.want.LatencyAvgUs) || !approx(got.LatencyMaxUs, tt.want.LatencyMaxUs) {
				t.Errorf("duration/avg/max = %v/%v/%v, want %v/%v/%v", got.DurationSec, got.LatencyAvgUs, got.LatencyMaxUs,
					tt.want.DurationSec, tt.want.LatencyAvgUs, tt.want.LatencyMaxUs)
			}
			got.LatencyUs, tt.want.LatencyUs = nil, nil
			got.DurationSec, tt.want.DurationSec = 0, 0
			got.LatencyAvgUs, got.LatencyMaxUs, tt.want.LatencyAvgUs, tt.want.LatencyMaxUs = 0, 0, 0, 0
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got, _ := parseWrk(wrkErrors); got.SocketErrors() != 30 {
		t.Errorf("SocketErrors = %d, want 30", got.SocketErrors())
	}
}

func approx(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-6*(1+b)
}

func TestParseWrkRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "unable to connect to 127.0.0.1:1 Connection refused\n", "Usage: wrk <options> <url>"} {
		if _, err := parseWrk(in); !errors.Is(err, errWrkOutput) {
			t.Errorf("parseWrk(%q) err = %v, want errWrkOutput", in, err)
		}
	}
}

func TestWrkArgs(t *testing.T) {
	w, _ := findWorkload("gzip-js")
	got := wrkArgs("/usr/bin/wrk", 1, 64, 2, w, "http://127.0.0.1:1/app.js")
	want := []string{"/usr/bin/wrk", "-t", "1", "-c", "64", "-d", "2s", "--timeout", "5s", "--latency", "-H", "Accept-Encoding: gzip", "http://127.0.0.1:1/app.js"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	w, _ = findWorkload("churn-128")
	got = wrkArgs("wrk", 2, 8, 1, w, "u")
	want = []string{"wrk", "-t", "2", "-c", "8", "-d", "1s", "--timeout", "5s", "--latency", "-H", "Connection: close", "u"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
