package app

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// routeMetricsConfig names two routes and leaves the others to their
// index: a site, a fixed response, a proxy to a slow upstream and one to
// an address that refuses.
func routeMetricsConfig(slow, dead string) string {
	return baseListen + `
server: {event_loops: 2}
metrics: {listen: "127.0.0.1:0"}
routes:
  - name: site
    path: /
    static: {root: ./site}
  - path: /hello
    respond: {status: 200, body: "hello\n"}
  - name: slow
    path: /slow/
    proxy: {to: ["http://` + slow + `"], retries: 0}
  - path: /dead/
    proxy: {to: ["http://` + dead + `"], retries: 0}
`
}

// slowUpstream answers after 60 ms with its head, and 500 ms later with
// the rest of its body. The durations are what the histograms measure:
// these sleeps are the test's subject.
func slowUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(60 * time.Millisecond)
		w.Header().Set("Content-Length", "10")
		w.WriteHeader(200)
		w.Write([]byte("01234"))
		w.(http.Flusher).Flush()
		time.Sleep(500 * time.Millisecond)
		w.Write([]byte("56789"))
	}))
	t.Cleanup(up.Close)
	return up
}

// do sends one request on a connection of its own and checks its status.
func do(t *testing.T, method, url, body string, status int) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d", method, url, resp.StatusCode, status)
	}
}

// histCount is the sample count of a histogram family's series with
// labels, and the count of its bucket of bound le.
func histCount(fams map[string]*dto.MetricFamily, name string, le float64, labels ...string) (total, below uint64) {
	f := fams[name]
	if f == nil {
		return 0, 0
	}
	for _, m := range f.Metric {
		if !hasLabels(m, labels) || m.Histogram == nil {
			continue
		}
		total += m.Histogram.GetSampleCount()
		for _, b := range m.Histogram.Bucket {
			if b.GetUpperBound() == le {
				below += b.GetCumulativeCount()
			}
		}
	}
	return total, below
}

// waitRequests scrapes until gale_requests_total and
// gale_http_requests_total reach n (a proxied
// response is counted once it ended, which may come a moment after the
// client read it).
func waitRequests(t *testing.T, ts *testServer, n float64) map[string]*dto.MetricFamily {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	waitUntil(5*time.Second, func() bool {
		fams = scrape(t, ts)
		// The loop's total and the route's record are counted at two
		// moments of an exchange's end: wait for both.
		return sum(fams, "gale_requests_total") >= n && sum(fams, "gale_http_requests_total") >= n
	})
	return fams
}

// Requests are counted by route, method and code, exactly: named routes
// under their name, the others under their index, what matched no route
// (a parse error) under none; the durations of a slow proxied response
// show its first byte before its last; body bytes are counted each way;
// and the per-route counts add up to the per-loop totals.
func TestMetricsByRoute(t *testing.T) {
	up := slowUpstream(t)
	ts := startServer(t, routeMetricsConfig(strings.TrimPrefix(up.URL, "http://"), deadAddr(t)), map[string]string{"a.txt": "file a\n"})
	do(t, "GET", ts.url("/a.txt"), "", 200) // a miss
	do(t, "GET", ts.url("/a.txt"), "", 200) // a hit
	do(t, "HEAD", ts.url("/a.txt"), "", 200)
	do(t, "GET", ts.url("/missing"), "", 404)
	do(t, "GET", ts.url("/hello"), "", 200)
	do(t, "POST", ts.url("/hello"), "", 200)
	do(t, "PURGE", ts.url("/hello"), "", 200)
	do(t, "POST", ts.url("/slow/x"), "0123456789abcdef", 200)
	do(t, "GET", ts.url("/dead/x"), "", 502)
	c := ts.dial()
	fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 400 {
		t.Fatalf("bad header: %v %v", resp, err)
	}
	c.Close()

	fams := waitRequests(t, ts, 10)
	for _, w := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"route", "site", "method", "GET", "code", "200"}, 2},
		{[]string{"route", "site", "method", "HEAD", "code", "200"}, 1},
		{[]string{"route", "site", "method", "GET", "code", "404"}, 1},
		{[]string{"route", "1", "method", "GET", "code", "200"}, 1},
		{[]string{"route", "1", "method", "POST", "code", "200"}, 1},
		{[]string{"route", "1", "method", "OTHER", "code", "200"}, 1},
		{[]string{"route", "slow", "method", "POST", "code", "200"}, 1},
		{[]string{"route", "3", "method", "GET", "code", "502"}, 1},
		{[]string{"route", "none", "method", "OTHER", "code", "400"}, 1},
		{nil, 10},
	} {
		if got := sum(fams, "gale_http_requests_total", w.labels...); got != w.want {
			t.Errorf("gale_http_requests_total%v = %v, want %v", w.labels, got, w.want)
		}
	}
	if got, loops := sum(fams, "gale_http_requests_total"), sum(fams, "gale_requests_total"); got != loops {
		t.Errorf("requests by route add up to %v, by loop %v", got, loops)
	}
	for route, want := range map[string]uint64{"site": 4, "1": 3, "slow": 1, "3": 1, "none": 1} {
		if n, _ := histCount(fams, "gale_http_request_duration_seconds", 0, "route", route); n != want {
			t.Errorf("duration histogram of route %s counts %d, want %d", route, n, want)
		}
		if n, _ := histCount(fams, "gale_http_time_to_first_byte_seconds", 0, "route", route); n != want {
			t.Errorf("first-byte histogram of route %s counts %d, want %d", route, n, want)
		}
	}
	// The slow upstream's head came after 60 ms, its last byte 500 ms
	// later: the first byte falls over 0.05 s and (440 ms to spare on a
	// busy machine) under 0.5 s, the last over 0.5 s.
	if _, under := histCount(fams, "gale_http_time_to_first_byte_seconds", 0.05, "route", "slow"); under != 0 {
		t.Errorf("first byte of the slow route under 50 ms")
	}
	if _, under := histCount(fams, "gale_http_time_to_first_byte_seconds", 0.5, "route", "slow"); under != 1 {
		t.Errorf("first byte of the slow route not under 500 ms")
	}
	if _, under := histCount(fams, "gale_http_request_duration_seconds", 0.5, "route", "slow"); under != 0 {
		t.Errorf("last byte of the slow route under 500 ms")
	}
	if _, under := histCount(fams, "gale_http_request_duration_seconds", 0.5, "route", "1"); under != 3 {
		t.Errorf("fixed responses slower than 500 ms")
	}
	for _, w := range []struct {
		name, route string
		want        float64
	}{
		{"gale_http_request_body_bytes_total", "slow", 16},
		{"gale_http_response_body_bytes_total", "slow", 10},
		{"gale_http_response_body_bytes_total", "1", 18}, // "hello\n" to GET, POST and PURGE
	} {
		if got := sum(fams, w.name, "route", w.route); got != w.want {
			t.Errorf("%s{route=%q} = %v, want %v", w.name, w.route, got, w.want)
		}
	}
}

// HTTP/2 exchanges, over TLS and h2c, are counted by route like HTTP/1.1
// ones, with their first byte and their last.
func TestMetricsByRouteH2(t *testing.T) {
	files := map[string]string{"index.html": "<h1>home</h1>\n", "404.html": "not here\n", "small.txt": "0123456789"}
	ts := startTLSServer(t, h2Site+"metrics: {listen: \"127.0.0.1:0\"}\n", files, nil)
	for _, cl := range h2Clients(t, ts) {
		h2get(t, cl.c, "GET", cl.base+"/hello", nil)
		h2get(t, cl.c, "GET", cl.base+"/small.txt", nil)
		h2get(t, cl.c, "HEAD", cl.base+"/small.txt", nil)
		h2get(t, cl.c, "GET", cl.base+"/old/x", nil)
	}
	fams := waitRequests(t, ts.testServer, 8)
	for _, w := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"route", "0", "method", "GET", "code", "200"}, 2},
		{[]string{"route", "1", "method", "GET", "code", "308"}, 2},
		{[]string{"route", "2", "method", "GET", "code", "200"}, 2},
		{[]string{"route", "2", "method", "HEAD", "code", "200"}, 2},
	} {
		if got := sum(fams, "gale_http_requests_total", w.labels...); got != w.want {
			t.Errorf("gale_http_requests_total%v = %v, want %v", w.labels, got, w.want)
		}
	}
	if n, _ := histCount(fams, "gale_http_time_to_first_byte_seconds", 0, "route", "2"); n != 4 {
		t.Errorf("first-byte histogram of the static route counts %d, want 4", n)
	}
	if got := sum(fams, "gale_http_response_body_bytes_total", "route", "0"); got != 12 {
		t.Errorf("response bytes of /hello: %v, want 12", got)
	}
}
