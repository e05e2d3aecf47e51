package importer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gale/app"
	"gale/config"
)

// diffCase is one request of a differential test and what to compare.
type diffCase struct {
	path    string
	headers map[string]string
	body    bool     // compare the bodies
	fields  []string // response fields compared (Content-Type by media type)
}

// diffSite writes the site both servers serve, and returns its root.
func diffSite(t *testing.T, dir string) string {
	root := filepath.Join(dir, "site")
	files := map[string]string{
		"index.html":         "<h1>home</h1>\n",
		"about.html":         "about\n",
		"docs/index.html":    "docs index\n",
		"docs/guide.txt":     "a guide\n",
		"assets/app.css":     "body{}\n",
		"assets/notes.txt":   "notes under assets\n",
		"private/index.html": "secret\n",
		"blocked/index.html": "never\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
		old := time.Now().Add(-time.Hour)
		must(t, os.Chtimes(p, old, old))
	}
	return root
}

// upstreamEcho is an HTTP server answering with the path it was asked
// for and the X-Tag field it got.
func upstreamEcho(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "yes")
		fmt.Fprintf(w, "upstream %s %s tag=%s\n", r.Method, r.URL.RequestURI(), r.Header.Get("X-Tag"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// stopProcess asks a server to stop with SIGTERM (nginx's master then
// stops its workers; a SIGKILL would leave them running) and waits for
// it, killing it after 5 seconds.
func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitListening dials addr until it answers, for at most 5 seconds.
func waitListening(t *testing.T, addr string, exited chan string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case msg := <-exited:
			t.Fatalf("server exited: %s", msg)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start listening", addr)
		}
	}
}

// startGale converts nothing: it serves yamlText (a converted config,
// its listener moved to a free port) in this process.
func startGale(t *testing.T, dir string, yamlText []byte) string {
	file := filepath.Join(dir, "gale.yaml")
	must(t, os.WriteFile(file, yamlText, 0o644))
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("converted config: %v\n%s", err, yamlText)
	}
	srv, err := app.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("gale did not boot")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		<-done
	})
	return srv.Addrs()[0]
}

// compare sends each case to both servers and compares the answers.
func compare(t *testing.T, ref, gale string, cases []diffCase) {
	client := &http.Client{
		Timeout:       5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(addr string, c diffCase) (*http.Response, string) {
		req, err := http.NewRequest("GET", "http://"+addr+c.path, nil)
		must(t, err)
		req.Host = "localhost"
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		must(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must(t, err)
		return resp, string(b)
	}
	for _, c := range cases {
		want, wantBody := get(ref, c)
		got, gotBody := get(gale, c)
		t.Logf("GET %s: %d %q", c.path, got.StatusCode, gotBody)
		if want.StatusCode != got.StatusCode {
			t.Errorf("GET %s: status %d from the original, %d from gale (body %q)", c.path, want.StatusCode, got.StatusCode, gotBody)
			continue
		}
		if c.body && wantBody != gotBody {
			t.Errorf("GET %s: body %q from the original, %q from gale", c.path, wantBody, gotBody)
		}
		for _, f := range c.fields {
			w, g := want.Header.Get(f), got.Header.Get(f)
			if f == "Content-Type" {
				w, _, _ = strings.Cut(w, ";")
				g, _, _ = strings.Cut(g, ";")
			}
			if f == "Location" {
				w = pathOnly(w)
			}
			if w != g {
				t.Errorf("GET %s: %s %q from the original, %q from gale", c.path, f, w, g)
			}
		}
	}
}

// pathOnly drops the scheme and authority nginx puts in a Location it
// makes absolute (absolute_redirect), keeping what gale sends.
func pathOnly(loc string) string {
	if u, err := url.Parse(loc); err == nil && u.Host != "" && strings.HasPrefix(u.Host, "localhost") {
		u.Scheme, u.Host = "", ""
		return u.String()
	}
	return loc
}
