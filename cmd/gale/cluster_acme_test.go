package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"gale/acme/acmetest"
	"gale/internal/redistest"
)

// testLockTTL is the certificate locks' expiry in the binary this test
// builds (linked in; users have no key for it).
const testLockTTL = 3 * time.Second

// TestClusterACMEHolderKilled: three gale processes share certificates
// through one Redis. The one that takes the certificate's lock first is
// killed (SIGKILL) while it holds the lock in the middle of obtaining,
// once certmagic has asked the store for the attempt's lease: its first
// request to the CA is waiting, since the CA answers nothing before
// Ready. One of the other two takes the lock once it expires (its
// holder no longer renews it), obtains the certificate, and both
// survivors serve it, with one issuance.
func TestClusterACMEHolderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes")
	}
	rs := redistest.Start(t)
	ca := acmetest.Start(t, acmetest.Options{Log: acmetest.TestLog(t)})
	bin := buildWithLockTTL(t, testLockTTL)
	prefix := "holder-killed:"
	var nodes []*clusterNode
	wake := make(chan struct{}, 1) // a write to any node's log
	for i := range 3 {
		nodes = append(nodes, startClusterNode(t, bin, i, ca, rs.Addr, prefix, wake))
	}
	holder := firstLogging(t, nodes, 30*time.Second, "lock acquired", "a.gale.test")
	// After the lock, certmagic asks the store for a lease of minutes for
	// the attempt and starts obtaining: the holder dies in the middle.
	firstLogging(t, []*clusterNode{holder}, 30*time.Second, "obtaining certificate", "a.gale.test")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	locks, err := rdb.Keys(context.Background(), prefix+"*lock*").Result()
	if err != nil || len(locks) == 0 {
		t.Fatalf("gale-%d logged the lock but Redis holds no lock key under %q: %v %v", holder.i, prefix, locks, err)
	}
	killed := time.Now()
	holder.kill(t)
	var survivors []*clusterNode
	for _, n := range nodes {
		if n != holder {
			survivors = append(survivors, n)
		}
	}
	ca.Ready(survivors[0].plainPort, survivors[0].tlsPort)
	taker := firstLogging(t, survivors, testLockTTL+30*time.Second, "lock acquired", "a.gale.test")
	t.Logf("gale-%d held the lock and was killed; gale-%d took it %v later (lock expiry %v)", holder.i, taker.i, time.Since(killed).Round(time.Millisecond), testLockTTL)
	if waited := time.Since(killed); waited > testLockTTL+20*time.Second {
		t.Errorf("gale-%d took the lock %v after the holder was killed; the lock expires after %v", taker.i, waited, testLockTTL)
	}
	for _, n := range survivors {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", n.tlsPort),
			&tls.Config{ServerName: "a.gale.test", RootCAs: ca.IssuerRoots(), NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatalf("gale-%d: handshake for a.gale.test: %v\n%s", n.i, err, n.log.String())
		}
		checkHello(t, c, n)
		c.Close()
	}
	if n := ca.IssuedFor("a.gale.test"); n != 1 {
		t.Errorf("issued %d certificates for a.gale.test, want 1", n)
	}
}

// buildWithLockTTL builds the command with the certificate locks'
// expiry linked in.
func buildWithLockTTL(t *testing.T, ttl time.Duration) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gale")
	cmd := exec.Command("go", "build", "-ldflags", "-X gale/app.certLockTTLFlag="+ttl.String(), "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// clusterNode is one gale process of the cluster.
type clusterNode struct {
	i         int
	cmd       *exec.Cmd
	plainPort int
	tlsPort   int
	log       *lineLog
	exited    chan struct{}
}

// startClusterNode runs gale-i with a plain listener and a TLS listener
// whose certificate for a.gale.test comes from ca through the shared
// store.
func startClusterNode(t *testing.T, bin string, i int, ca *acmetest.CA, redisAddr, prefix string, wake chan struct{}) *clusterNode {
	t.Helper()
	dir := t.TempDir()
	n := &clusterNode{i: i, plainPort: freeTCPPort(t), tlsPort: freeTCPPort(t), log: &lineLog{wake: wake}, exited: make(chan struct{})}
	y := fmt.Sprintf("listen:\n  - \"127.0.0.1:%d\"\n  - address: \"127.0.0.1:%d\"\n"+
		"    tls: {automatic: {ca: %q, ca_root: %q, domains: [a.gale.test], challenges: [http-01]}}\n"+
		"cluster: {redis: {address: %q, prefix: %q}, instance: gale-%d}\n"+
		"routes:\n  - path: /\n    respond: {body: \"hello\\n\"}\n", n.plainPort, n.tlsPort, ca.URL, ca.RootFile, redisAddr, prefix, i)
	cfg := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, "serve", "-c", cfg)
	n.cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "STATE_DIRECTORY="+dir)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Kill()
		<-n.exited
		if t.Failed() {
			t.Logf("gale-%d log:\n%s", i, n.log.String())
		}
	})
	return n
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *clusterNode) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("gale-%d did not exit on SIGKILL", n.i)
	}
}

// firstLogging waits for the first of nodes to log a line holding every
// one of parts.
func firstLogging(t *testing.T, nodes []*clusterNode, within time.Duration, parts ...string) *clusterNode {
	t.Helper()
	deadline := time.After(within)
	for {
		for _, n := range nodes {
			if n.log.has(parts...) {
				return n
			}
		}
		select {
		case <-nodes[0].log.wake:
		case <-deadline:
			for _, n := range nodes {
				t.Logf("gale-%d:\n%s", n.i, n.log.String())
			}
			t.Fatalf("no instance logged %q within %v", parts, within)
		}
	}
}

// checkHello sends a GET on c and wants gale's 200 "hello\n".
func checkHello(t *testing.T, c net.Conn, n *clusterNode) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.gale.test\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(c))
	if !strings.HasPrefix(string(b), "HTTP/1.1 200") || !strings.HasSuffix(string(b), "\r\n\r\nhello\n") {
		t.Fatalf("gale-%d over TLS: %q", n.i, b)
	}
}

// freeTCPPort returns a port of 127.0.0.1 that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lineLog keeps what a process logs and wakes a waiter on every write.
type lineLog struct {
	mu   sync.Mutex
	b    strings.Builder
	wake chan struct{} // shared by the cluster's logs, buffered 1
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// has reports whether one line holds every one of parts.
func (l *lineLog) has(parts ...string) bool {
	for _, line := range strings.Split(l.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
