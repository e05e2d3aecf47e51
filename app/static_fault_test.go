package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Files changed in place while they are being sent: a response that
// arrives complete (its Content-Length reached) carries the bytes of one
// version, the one its ETag names; a response cut short is marked as
// such by the connection closing before the end. Over and under
// cache.max_file_bytes (from the cache's memory, and streamed from disk).

// faultVersions are the contents a rewritten file takes in turn, all of
// one size so that a mixed body cannot be told by its length.
func faultVersions(n, size int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = pseudoRandom(size, uint64(1000+i))
	}
	return vs
}

// rewriteInPlace overwrites path's bytes with each version in turn, in
// place (same inode, no truncation, so a reader can see a mix), until
// stop is closed, and counts the rewrites. Each version is written by one
// pwrite(2): a writer that stops between two writes of one version for
// longer than the racy window leaves a file whose bytes are, meanwhile,
// a version of their own (with its own mtime), which no server can tell
// from a finished one.
func rewriteInPlace(t *testing.T, path string, vs [][]byte, stop <-chan struct{}, rewrites *atomic.Int64) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for i := 1; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := f.WriteAt(vs[i%len(vs)], 0); err != nil {
			t.Error(err)
			return
		}
		rewrites.Add(1)
		standPastRacyWindow()
	}
}

// faultOutcome is what one download saw.
type faultOutcome int

const (
	outcomeWhole     faultOutcome = iota // complete and equal to one version
	outcomeCut                           // the connection closed before the end
	outcomeMixed                         // complete, but equal to no version
	outcomeNoVersion                     // no response at all, or an unexpected status
	outcomeBusy                          // 503 with Retry-After: the file was being written
)

// downloadOnce fetches path on a new connection and classifies the body.
func downloadOnce(addr, path string, vs [][]byte) (faultOutcome, string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return outcomeNoVersion, err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		return outcomeNoVersion, err.Error()
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return outcomeCut, err.Error()
	}
	if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "" {
		return outcomeBusy, resp.Status
	}
	if resp.StatusCode != 200 {
		return outcomeNoVersion, resp.Status
	}
	for _, v := range vs {
		if bytes.Equal(body, v) {
			return outcomeWhole, resp.Header.Get("ETag")
		}
	}
	return outcomeMixed, "ETag " + resp.Header.Get("ETag") + ", " + strconv.Itoa(len(body)) + " bytes"
}

func TestStaticRewrittenInPlaceNeverMixes(t *testing.T) {
	ts := startServer(t, `
cache: {revalidate: 1ms, max_file_bytes: 1MiB}
server: {max_buffered_output: 64KiB}
`+siteConfig, nil)
	for _, tt := range []struct {
		name string
		size int
	}{{"cached.bin", 512 << 10}, {"streamed.bin", 4 << 20}} {
		t.Run(tt.name, func(t *testing.T) {
			vs := faultVersions(4, tt.size)
			path := filepath.Join(ts.dir, "site", tt.name)
			if err := os.WriteFile(path, vs[0], 0o644); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var rewrites atomic.Int64
			var writer sync.WaitGroup
			writer.Go(func() { rewriteInPlace(t, path, vs, stop, &rewrites) })
			counts := make([]atomic.Int64, 5)
			var clients sync.WaitGroup
			var mu sync.Mutex
			var mixed []string
			for range 50 {
				clients.Go(func() {
					for range 4 {
						o, what := downloadOnce(ts.addr, "/"+tt.name, vs)
						counts[o].Add(1)
						if o == outcomeMixed {
							mu.Lock()
							mixed = append(mixed, what)
							mu.Unlock()
						}
					}
				})
			}
			clients.Wait()
			close(stop)
			writer.Wait()
			t.Logf("%d rewrites; whole %d, cut %d, 503 %d, mixed %d, no response %d",
				rewrites.Load(), counts[outcomeWhole].Load(), counts[outcomeCut].Load(), counts[outcomeBusy].Load(),
				counts[outcomeMixed].Load(), counts[outcomeNoVersion].Load())
			if len(mixed) > 0 {
				t.Fatalf("%d complete responses mix versions: %v", len(mixed), mixed[:min(len(mixed), 5)])
			}
			if counts[outcomeNoVersion].Load() > 0 {
				t.Fatalf("%d downloads got no response", counts[outcomeNoVersion].Load())
			}
			// Once the writes stop, the file is served whole again.
			if err := os.WriteFile(path, vs[2], 0o644); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the file to be served whole", func() bool {
				o, etag := downloadOnce(ts.addr, "/"+tt.name, vs[2:3])
				return o == outcomeWhole && etag != ""
			})
		})
	}
}

// TestStaticRacyFileWaits: files written a moment ago, within their racy
// window, asked for at once by HTTP/1.1, HTTP/2 over TLS and h2c clients,
// many at a time: every request waits out the window and gets the whole
// file, and the descriptor budget comes back to where it was.
func TestStaticRacyFileWaits(t *testing.T) {
	ts := h2Hostile(t, "cache: {max_file_bytes: 64KiB}\n", nil)
	used := ts.srv.sh.Budget.Snapshot().Used
	site := filepath.Join(ts.dir, "site")
	want := map[string][]byte{"/racy-large.bin": pseudoRandom(3<<20, 77), "/racy-small.bin": pseudoRandom(4<<10, 78)}
	for name, b := range want {
		if err := os.WriteFile(filepath.Join(site, name[1:]), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	clients := h2Clients(t, ts)
	for proto, cl := range clients {
		for path, body := range want {
			for range 5 {
				wg.Go(func() {
					resp, err := cl.c.Get(cl.base + path)
					if err != nil {
						t.Errorf("%s %s: %v", proto, path, err)
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || err != nil || !bytes.Equal(got, body) {
						t.Errorf("%s %s: %d, %d of %d bytes, %v", proto, path, resp.StatusCode, len(got), len(body), err)
					}
				})
			}
		}
	}
	wg.Wait()
	for _, cl := range clients {
		cl.c.CloseIdleConnections()
	}
	awaitBudget(t, ts, used)
}
