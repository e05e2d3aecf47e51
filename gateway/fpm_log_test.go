package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFPMBodyBytesLogged: the body bytes of a FastCGI response are
// counted once in the access log, for HTTP/1.1 and HTTP/2 clients alike
// (the engine counts what went through its sink; the route reports only
// what it sent past it).
func TestFPMBodyBytesLogged(t *testing.T) {
	s := startSite(t, "access_log: {path: access.log, format: combined}\n")
	writeFiles(t, s.root, map[string]string{"bytes.php": `<?php echo str_repeat('x', 1000);`})
	var want []string
	for _, cl := range []struct {
		name, proto string
		c           *http.Client
	}{
		{"h1", "HTTP/1.1", httpClient()},
		{"h2c", "HTTP/2.0", h2cClient(t)},
	} {
		target := "/bytes.php?client=" + cl.name
		resp, err := cl.c.Get(s.gale.url(target))
		if err != nil {
			t.Fatalf("%s: %v", cl.name, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 1000 || resp.Proto != cl.proto {
			t.Fatalf("%s: %s, %d bytes, %v", cl.name, resp.Proto, len(b), err)
		}
		want = append(want, fmt.Sprintf(`"GET %s %s" 200 1000 `, target, cl.proto))
	}
	// The loops hand their lines to the log's writer as they go: wait
	// for both lines to be written (polled, bounded), then check them.
	file := filepath.Join(s.dir, "access.log")
	var data []byte
	eventually(t, 10*time.Second, "the access log lines", func() bool {
		data, _ = os.ReadFile(file)
		return strings.Count(string(data), "/bytes.php?client=") == len(want)
	})
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			t.Errorf("access log has no %q:\n%s", w, data)
		}
	}
}
