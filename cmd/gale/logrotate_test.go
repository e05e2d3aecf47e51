package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The logrotate convention: the access log file is moved, then gale gets
// SIGUSR1. With clients sending requests throughout, every request's line
// is written exactly once, the moved file holds the earlier ones and a new
// file at the path the later ones.
func TestAccessLogReopenOnSIGUSR1(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	file := filepath.Join(dir, "gale.yaml")
	doc := "listen: [\"127.0.0.1:0\"]\naccess_log: {path: " + logPath + "}\nroutes:\n  - path: /\n    respond: {body: \"ok\"}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCommand(t, exec.Command(galeBinary(t), "serve", "-c", file))

	const clients, each = 4, 300
	var wg sync.WaitGroup
	half := make(chan struct{}, clients)
	moved := make(chan struct{})
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if i == each/2 {
					half <- struct{}{}
					<-moved
				}
				resp, err := http.Get(fmt.Sprintf("%s/c%d/r%d", p.base, c, i))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range clients {
		<-half
	}
	// Half of every client's requests are answered, and lines have
	// reached the file (others may still be on their way): move the file
	// and signal while the rest come in.
	eventually(t, 10*time.Second, "an access log line", func() bool {
		st, err := os.Stat(logPath)
		return err == nil && st.Size() > 0
	})
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	close(moved)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; stderr: %s", err, p.stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("gale did not exit")
	}
	seen := map[string]int{}
	count := func(name string) int {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if i := strings.Index(line, "\"GET /c"); i >= 0 {
				target := strings.Fields(line[i+1:])[1]
				seen[target]++
				n++
			}
		}
		return n
	}
	before, after := count(logPath+".1"), count(logPath)
	if before == 0 || after == 0 {
		t.Fatalf("moved file %d lines, new file %d: the reopen did not split the log", before, after)
	}
	if len(seen) != clients*each {
		t.Errorf("%d distinct requests logged, want %d", len(seen), clients*each)
	}
	for target, n := range seen {
		if n != 1 {
			t.Errorf("%s logged %d times", target, n)
		}
	}
}
