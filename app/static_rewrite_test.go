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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gale/cache"
)

// A file rewritten while 50 clients download it (every fifth one
// reading slowly, so that a download spans rewrites), in place and by
// rename, at sizes written from memory (under cache.BlobMin), sent from
// the loop with sendfile from the cache's sealed memfd (under
// server.max_buffered_output), off the loop from the same memfd (over
// it, under cache.max_file_bytes), and streamed from disk (over
// cache.max_file_bytes): every complete body is exactly the version its
// ETag names. A body cut short (the connection closed before its
// Content-Length) is allowed; a complete one that mixes versions, or that
// is another version than its ETag says, is not.
func TestStaticRewriteKeepsETagVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("rewrites files under load: not in -short")
	}
	ts := startServer(t, `
cache: {revalidate: 1ms, max_file_bytes: 1MiB}
server: {max_buffered_output: 256KiB}
`+siteConfig, nil)
	for _, mode := range []string{"in-place", "rename"} {
		for _, tt := range []struct {
			name string
			size int
		}{{"memory.bin", 48 << 10}, {"loop.bin", 160 << 10}, {"offloop.bin", 512 << 10}, {"streamed.bin", 4 << 20}} {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				rewriteWhileDownloading(t, ts, mode, mode+"-"+tt.name, tt.size)
			})
		}
	}
}

// versionTags maps each ETag a rewrite produced to the index of the
// version written under it. Safe for concurrent use.
type versionTags struct {
	mu   sync.Mutex
	tags map[string]int
}

// note records that the file open as f (or at path, when f is nil) now
// holds version v.
func (vt *versionTags) note(t *testing.T, f *os.File, path string, v int) {
	var fi os.FileInfo
	var err error
	if f != nil {
		fi, err = f.Stat()
	} else {
		fi, err = os.Stat(path)
	}
	if err != nil {
		t.Error(err)
		return
	}
	tag := string(cache.AppendETag(nil, fi.ModTime().UnixNano(), fi.Size()))
	vt.mu.Lock()
	defer vt.mu.Unlock()
	if old, ok := vt.tags[tag]; ok && old != v {
		vt.tags[tag] = -1 // two versions under one mtime: the tag names neither for sure
		return
	}
	vt.tags[tag] = v
}

func (vt *versionTags) version(tag string) (int, bool) {
	vt.mu.Lock()
	defer vt.mu.Unlock()
	v, ok := vt.tags[tag]
	return v, ok
}

// rewriteLoop rewrites path with vs in turn until stop is closed: in
// place with one pwrite(2) per version, or by writing a new file and
// renaming it over path. It records each version's ETag.
func rewriteLoop(t *testing.T, mode, path string, vs [][]byte, vt *versionTags, stop <-chan struct{}, rewrites *atomic.Int64) {
	var f *os.File
	if mode == "in-place" {
		var err error
		if f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
	}
	for i := 1; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		v := i % len(vs)
		if f != nil {
			if _, err := f.WriteAt(vs[v], 0); err != nil {
				t.Error(err)
				return
			}
			vt.note(t, f, "", v)
		} else {
			tmp := fmt.Sprintf("%s.%d.tmp", path, i)
			if err := os.WriteFile(tmp, vs[v], 0o644); err != nil {
				t.Error(err)
				return
			}
			vt.note(t, nil, tmp, v)
			if err := os.Rename(tmp, path); err != nil {
				t.Error(err)
				return
			}
		}
		rewrites.Add(1)
		standPastRacyWindow()
	}
}

// standPastRacyWindow lets a version just written stand past its racy
// window (cache.Version.Racy, 25 ms), so that it gets an mtime of its
// own and can be served whole: a file within the window is answered 503.
// The window is a time, so this waits a time.
func standPastRacyWindow() { time.Sleep(40 * time.Millisecond) }

// downloadTagged fetches path on a new connection and returns the
// outcome, the ETag and, for a whole body, which version it is. A slow
// client (rewritten not nil) has a small receive buffer and lets the file
// be rewritten in the middle of its download (see readBody).
func downloadTagged(addr, path string, vs [][]byte, rewritten func() int64) (faultOutcome, string, int) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if rewritten != nil {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
			})
		}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return outcomeNoVersion, err.Error(), -1
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		return outcomeNoVersion, err.Error(), -1
	}
	body, err := readBody(resp.Body, rewritten)
	switch {
	case err != nil:
		return outcomeCut, err.Error(), -1
	case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
		return outcomeBusy, resp.Status, -1
	case resp.StatusCode != 200:
		return outcomeNoVersion, resp.Status, -1
	}
	tag := resp.Header.Get("ETag")
	for i, v := range vs {
		if bytes.Equal(body, v) {
			return outcomeWhole, tag, i
		}
	}
	return outcomeMixed, tag, -1
}

// readBody reads r to its end; with rewritten, slowly: after its first
// 16 KiB and after each MiB it reads on only once the file was rewritten
// (bounded), so that its download outlasts a version.
func readBody(r io.Reader, rewritten func() int64) ([]byte, error) {
	if rewritten == nil {
		return io.ReadAll(r)
	}
	var body []byte
	buf := make([]byte, 16<<10)
	for next := 0; ; {
		n, err := r.Read(buf)
		body = append(body, buf[:n]...)
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return body, err
		}
		if len(body) > next {
			seen := rewritten()
			waitUntil(5*time.Second, func() bool { return rewritten() > seen })
			next += 1 << 20
		}
	}
}

func rewriteWhileDownloading(t *testing.T, ts *testServer, mode, name string, size int) {
	vs := faultVersions(4, size)
	path := filepath.Join(ts.dir, "site", name)
	if err := os.WriteFile(path, vs[0], 0o644); err != nil {
		t.Fatal(err)
	}
	vt := &versionTags{tags: map[string]int{}}
	vt.note(t, nil, path, 0)
	type got struct {
		tag string
		v   int
	}
	stop := make(chan struct{})
	var rewrites atomic.Int64
	var writer sync.WaitGroup
	writer.Go(func() { rewriteLoop(t, mode, path, vs, vt, stop, &rewrites) })
	counts := make([]atomic.Int64, 5)
	var mu sync.Mutex
	var whole []got
	var bad []string
	var clients sync.WaitGroup
	for i := range 50 {
		clients.Go(func() {
			// At least 4 downloads each, and on until the file was
			// rewritten a few times.
			for n := 0; n < 4 || (rewrites.Load() < 6 && n < 400); n++ {
				var slow func() int64
				if i%5 == 0 {
					slow = rewrites.Load
				}
				o, tag, v := downloadTagged(ts.addr, "/"+name, vs, slow)
				counts[o].Add(1)
				mu.Lock()
				switch o {
				case outcomeWhole:
					whole = append(whole, got{tag, v})
				case outcomeMixed, outcomeNoVersion:
					bad = append(bad, fmt.Sprintf("%d %s", o, tag))
				}
				mu.Unlock()
			}
		})
	}
	clients.Wait()
	close(stop)
	writer.Wait()
	t.Logf("%d rewrites; whole %d, cut %d, 503 %d, mixed %d, no response %d", rewrites.Load(),
		counts[outcomeWhole].Load(), counts[outcomeCut].Load(), counts[outcomeBusy].Load(),
		counts[outcomeMixed].Load(), counts[outcomeNoVersion].Load())
	if len(bad) > 0 {
		t.Fatalf("%d responses mixed versions or failed: %v", len(bad), bad[:min(len(bad), 5)])
	}
	if counts[outcomeWhole].Load() == 0 && (mode == "rename" || size <= 1<<20) {
		// In place, a 4 MiB download by 50 clients at once outlasts
		// each version: every one is cut, which is the guarantee at work.
		t.Fatal("no download was served whole")
	}
	for _, g := range whole {
		v, ok := vt.version(g.tag)
		if !ok || (v >= 0 && v != g.v) {
			t.Fatalf("a body of version %d came under ETag %s, which names version %d (known %v)", g.v, g.tag, v, ok)
		}
	}
}
