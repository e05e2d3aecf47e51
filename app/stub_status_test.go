package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The stub_status page has nginx's exact layout (as nginx writes it:
// "Active connections: N \n", trailing spaces included), reads back with
// the format nginx-prometheus-exporter scans it with, and counts what
// happened: accepted and handled connections, requests, and a kept-alive
// connection waiting.
func TestStubStatus(t *testing.T) {
	cfg := strings.Replace(metricsConfig(deadAddr(t)), `metrics: {listen: "127.0.0.1:0"}`, `metrics: {listen: "127.0.0.1:0", stub_status: /nginx_status}`, 1)
	ts := startServer(t, cfg, map[string]string{"a.txt": "a"})
	for range 3 {
		do(t, "GET", ts.url("/hello"), "", 200)
	}
	dialKeep(t, ts.addr, nil) // one request, then idle
	layout := regexp.MustCompile(`^Active connections: (\d+) \nserver accepts handled requests\n (\d+) (\d+) (\d+) \nReading: (\d+) Writing: (\d+) Waiting: (\d+) \n$`)
	var body []byte
	var got [7]int64
	waitUntil(5*time.Second, func() bool { // the sweep publishes states every 100 ms
		resp, err := http.Get("http://" + ts.srv.MetricsAddr() + "/nginx_status")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/plain" {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
		}
		if !layout.Match(body) {
			t.Fatalf("not nginx's layout:\n%q", body)
		}
		// What nginx-prometheus-exporter scans.
		const exporterTemplate = "Active connections: %d \nserver accepts handled requests\n%d %d %d \nReading: %d Writing: %d Waiting: %d \n"
		if _, err := fmt.Fscanf(bytes.NewReader(body), exporterTemplate, &got[0], &got[1], &got[2], &got[3], &got[4], &got[5], &got[6]); err != nil {
			t.Fatalf("the exporter's scan: %v\n%q", err, body)
		}
		return got[0] == 1 && got[6] == 1
	})
	want := [7]int64{1, 4, 4, 4, 0, 0, 1}
	if got != want {
		t.Errorf("active, accepts, handled, requests, reading, writing, waiting = %v, want %v\n%s", got, want, body)
	}
	st := ts.srv.Stats()
	if got[2] != int64(st.Accepted) || got[3] != int64(st.Requests) {
		t.Errorf("handled %d requests %d, Stats %d %d", got[2], got[3], st.Accepted, st.Requests)
	}
	// The metrics are still where they were.
	if fams := scrape(t, ts); sum(fams, "gale_requests_total") != 4 {
		t.Errorf("metrics: %v requests", sum(fams, "gale_requests_total"))
	}
}

// The rendering is nginx's, byte for byte.
func TestAppendStubStatus(t *testing.T) {
	got := string(appendStubStatus(nil, stubStatus{active: 291, accepts: 16630948, handled: 16630947, requests: 31070465, reading: 6, writing: 179, waiting: 106}))
	want := "Active connections: 291 \nserver accepts handled requests\n 16630948 16630947 31070465 \nReading: 6 Writing: 179 Waiting: 106 \n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
