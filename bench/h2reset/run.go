package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"time"
)

type runConfig struct {
	target, path, normal string
	from                 net.IP
	parallel, conns      int
	pairs                int
	split                bool
	dur                  time.Duration
	pids                 []int
}

type result struct {
	cfg               runConfig
	flood             *floodStats
	upReqs, upConns   int64
	ok, failed        int
	lat               []time.Duration
	quietFDs, peakFDs int
}

// run measures: the descriptors of the quiet server, then the flood with
// the normal client beside it, then what reached the upstream.
func run(cfg runConfig, up *counter) *result {
	r := &result{cfg: cfg, flood: &floodStats{}}
	r.quietFDs = countFDs(cfg.pids)
	stop := make(chan struct{})
	floodDone := make(chan struct{})
	go func() { flood(cfg, r.flood, stop); close(floodDone) }()
	fdsDone := make(chan int)
	go func() { fdsDone <- peakFDs(cfg.pids, floodDone) }()
	deadline := time.Now().Add(cfg.dur)
	client := normalClient(cfg)
	for time.Now().Before(deadline) {
		t0 := time.Now()
		if get(client, "http://"+cfg.target+cfg.normal) {
			r.ok++
			r.lat = append(r.lat, time.Since(t0))
		} else {
			r.failed++
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	<-floodDone
	r.peakFDs = <-fdsDone
	time.Sleep(500 * time.Millisecond) // dials in flight land upstream
	r.upReqs, r.upConns = up.reqs.Load(), up.conns.Load()
	return r
}

// normalClient is an h2c client with prior knowledge from 127.0.0.1.
func normalClient(cfg runConfig) *http.Client {
	tr := &http.Transport{DisableCompression: true}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	tr.DialContext = d.DialContext
	return &http.Client{Transport: tr, Timeout: 2 * time.Second}
}

// get reports whether GET url answered 200 "up".
func get(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == 200 && string(b) == "up\n"
}

// countFDs is how many descriptors the processes pids hold together.
func countFDs(pids []int) int {
	n := 0
	for _, pid := range pids {
		if es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
			n += len(es)
		}
	}
	return n
}

// peakFDs samples the descriptors of pids every 20 ms until done, and
// returns the most seen.
func peakFDs(pids []int, done <-chan struct{}) int {
	peak := 0
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		peak = max(peak, countFDs(pids))
		select {
		case <-done:
			return peak
		case <-t.C:
		}
	}
}

func (r *result) print(w io.Writer) {
	c := r.cfg
	mode := "HEADERS+RST_STREAM in one write"
	if c.split {
		mode = "HEADERS, then RST_STREAM in a second write"
	}
	fmt.Fprintf(w, "flood: %s, %d pairs per connection, %d open at once, %.1fs\n", mode, c.pairs, c.parallel, c.dur.Seconds())
	f := r.flood
	fmt.Fprintf(w, "flood connections: %d opened, %d refused at dial, %d ended by GOAWAY, %d answered to the end\n",
		f.opened.Load(), f.failedDial.Load(), f.goAways.Load(), f.acked.Load())
	fmt.Fprintf(w, "pairs written: %d\n", f.opened.Load()*int64(c.pairs))
	fmt.Fprintf(w, "upstream: %d requests (%d of them the normal client's), %d connections\n", r.upReqs, r.ok, r.upConns)
	if len(c.pids) > 0 {
		fmt.Fprintf(w, "descriptors: %d quiet, %d at the peak\n", r.quietFDs, r.peakFDs)
	}
	fmt.Fprintf(w, "normal client: %d/%d answered", r.ok, r.ok+r.failed)
	if len(r.lat) > 0 {
		slices.Sort(r.lat)
		q := func(p float64) time.Duration { return r.lat[int(p*float64(len(r.lat)-1))] }
		fmt.Fprintf(w, ", latency p50 %v, p99 %v, max %v", q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), r.lat[len(r.lat)-1].Round(time.Microsecond))
	}
	fmt.Fprintln(w)
}
