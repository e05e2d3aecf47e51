package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gale/admin"
	"gale/app"
	"gale/config"
)

// The API in process, so that the race detector sees its reads of the
// running server beside the loops: loads, status, upstreams, purges and
// route explanations from several goroutines while clients are served.
func TestAdminConcurrent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") })}
	upLn, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = up.Serve(upLn) }()
	defer up.Close()
	dead, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there: FastCGI requests fail
	doc := func(v int) []byte {
		return []byte(fmt.Sprintf(`listen: ["127.0.0.1:0"]
admin: {listen: unix:admin.sock}
routes:
  - path: /v
    respond: {body: "v%d"}
  - path: /files/
    static: {root: .}
  - path: /up/
    proxy: {to: [%q]}
  - path: /php/
    fastcgi: {to: %q, root: .}
`, v, upLn.Addr().String(), deadAddr))
	}
	file := filepath.Join(dir, "gale.yaml")
	cfg, err := config.Parse(doc(0), file)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := app.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run() }()
	<-srv.Booted()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
		<-runErr
	}()

	var mu sync.Mutex
	src := doc(0)
	stopped := make(chan struct{}, 1)
	ln, err := admin.Listen(cfg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	api := admin.New(ln, admin.Backend{
		Server: srv,
		Load: func(data []byte, file string) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			c, err := config.Parse(data, file)
			if err != nil {
				srv.ReloadRejected()
				return nil, err
			}
			notes, err := srv.Reload(c)
			if err == nil {
				src = data
			}
			return notes, err
		},
		Source: func() []byte { mu.Lock(); defer mu.Unlock(); return src },
		Stop:   func() { stopped <- struct{}{} },
	})
	go func() { _ = api.Serve() }()
	defer api.Close()
	c, err := admin.NewClient(cfg.Admin)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addrs()[0]

	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	expect := func(method, path string, body []byte, status int) error {
		resp, err := c.Do(method, path, body, nil)
		if err != nil {
			return err
		}
		if resp.Status != status {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.Status, resp.Body)
		}
		return nil
	}
	getStatus := func(path string, status int) error {
		resp, err := http.Get(base + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != status {
			return fmt.Errorf("GET %s: %d, want %d", path, resp.StatusCode, status)
		}
		return nil
	}
	get := func(path string) error { return getStatus(path, 200) }
	run(func(i int) error { return expect(http.MethodPost, "/load", doc(i+1), 200) })
	run(func(int) error { return expect(http.MethodPost, "/load", []byte("listen: 7\n"), 400) })
	run(func(int) error { return expect(http.MethodGet, "/status", nil, 200) })
	run(func(int) error { return expect(http.MethodGet, "/upstreams", nil, 200) })
	run(func(int) error { return expect(http.MethodPost, "/purge?path=/a.txt", nil, 200) })
	run(func(int) error { return expect(http.MethodGet, "/routes?url=/files/a.txt", nil, 200) })
	run(func(int) error { return expect(http.MethodGet, "/config?format=json", nil, 200) })
	run(func(int) error { return get("/files/a.txt") })
	run(func(int) error { return get("/up/x") })
	run(func(int) error { return get("/v") })
	run(func(int) error { return getStatus("/php/a.php", http.StatusBadGateway) })
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	resp, err := c.Do(http.MethodGet, "/config", nil, nil)
	if err != nil || !strings.Contains(string(resp.Body), fmt.Sprintf(`body: "v%d"`, rounds)) {
		t.Fatalf("GET /config after the loads: %v %s", err, resp.Body)
	}
	var st app.Status
	resp, err = c.Do(http.MethodGet, "/status", nil, nil)
	if err != nil || json.Unmarshal(resp.Body, &st) != nil || st.Reloads != rounds || st.ReloadFails != rounds {
		t.Fatalf("status after %d loads and %d refusals: %+v (%v)", rounds, rounds, st, err)
	}
	if err := expect(http.MethodPost, "/stop", nil, http.StatusAccepted); err != nil {
		t.Fatal(err)
	}
	<-stopped
}
