package proxy_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const nginxBin = "/usr/sbin/nginx"

// nginxTLS is Debian's nginx serving HTTPS on 127.0.0.1 with a
// certificate of the pki, requiring a client certificate of its client
// CA (ssl_verify_client on), with files of several sizes and an access
// log that says whether each session was resumed and on which
// connection each request came.
type nginxTLS struct {
	addr, dir string
	files     map[string][]byte
}

func startNginxTLS(t *testing.T, p *pki, cert *leaf) *nginxTLS {
	t.Helper()
	return startNginx(t, p, cert, false)
}

// startNginx is startNginxTLS, with HTTP/2 offered by ALPN when h2 is set.
func startNginx(t *testing.T, p *pki, cert *leaf, h2 bool) *nginxTLS {
	t.Helper()
	if _, err := os.Stat(nginxBin); err != nil {
		t.Skip("nginx is not installed")
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	n := &nginxTLS{addr: addr, dir: dir, files: map[string][]byte{}}
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 1000, 64 << 10, 1 << 20} {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		name := fmt.Sprintf("/f%d", size)
		n.files[name] = b
		writeFile(t, filepath.Join(dir, "www", name), b)
	}
	listen := addr + " ssl"
	if h2 {
		listen += " http2"
	}
	conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 128; }
http {
  log_format tls '$request_uri $status $server_protocol reused=$ssl_session_reused client=$ssl_client_verify conn=$connection';
  access_log %[1]s/access.log tls;
  client_body_temp_path %[1]s/tmp-body;
  proxy_temp_path %[1]s/tmp-proxy;
  fastcgi_temp_path %[1]s/tmp-fcgi;
  uwsgi_temp_path %[1]s/tmp-uwsgi;
  scgi_temp_path %[1]s/tmp-scgi;
  keepalive_requests 1000;
  server {
    listen %[2]s ssl;
    ssl_certificate %[3]s;
    ssl_certificate_key %[4]s;
    ssl_client_certificate %[5]s;
    ssl_verify_client on;
    ssl_session_cache shared:tls:1m;
    root %[1]s/www;
    location = /reused { return 200 "$ssl_session_reused"; }
  }
}
`, dir, listen, cert.certFile, cert.keyFile, p.clientCA.file)
	writeFile(t, filepath.Join(dir, "nginx.conf"), []byte(conf))
	cmd := exec.Command(nginxBin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	eventually(t, 5*time.Second, "nginx to listen", func() bool {
		select {
		case <-exited:
			t.Fatalf("nginx exited: %s", out.String())
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return n
}

// accessLog returns nginx's access log lines.
func (n *nginxTLS) accessLog(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(n.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func nginxRoute(p *pki, n *nginxTLS, maxIdle int, tlsSec string) string {
	if tlsSec == "" {
		tlsSec = fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.client.certFile, p.client.keyFile)
	}
	return fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", retries: 0, max_idle_per_upstream: %d, tls: %s}\n", n.addr, maxIdle, tlsSec)
}

// TestNginxUpstreamTLS: requests pass to nginx with the right client
// certificate, several in a row on one reused upstream connection, with
// bodies of 1 B to 1 MiB compared byte for byte.
func TestNginxUpstreamTLS(t *testing.T) {
	p := newPKI(t)
	n := startNginxTLS(t, p, p.server)
	g := startGale(t, nginxRoute(p, n, 8, ""))
	c := newClient()
	for round := 0; round < 2; round++ {
		for name, want := range n.files {
			resp, err := c.Get(g.url(name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, want) {
				t.Fatalf("%s: status %d, %d of %d bytes (err %v)\n%s", name, resp.StatusCode, len(got), len(want), err, g.logs.String())
			}
		}
	}
	lines := n.accessLog(t)
	if len(lines) != 2*len(n.files) {
		t.Fatalf("nginx logged %d requests, want %d:\n%s", len(lines), 2*len(n.files), strings.Join(lines, "\n"))
	}
	conn := lines[0][strings.LastIndex(lines[0], "conn="):]
	for _, l := range lines {
		if !strings.Contains(l, "client=SUCCESS") || !strings.HasSuffix(l, conn) {
			t.Fatalf("want every request verified and on one connection (%s):\n%s", conn, strings.Join(lines, "\n"))
		}
	}
}

// TestNginxUpstreamResumption: with no idle connection kept, each
// request dials nginx anew, and the later ones resume the session
// ($ssl_session_reused).
func TestNginxUpstreamResumption(t *testing.T) {
	p := newPKI(t)
	n := startNginxTLS(t, p, p.server)
	g := startGale(t, nginxRoute(p, n, 0, ""))
	c := newClient()
	var reused []string
	for i := 0; i < 4; i++ {
		code, body := g.get(c, "/reused")
		if code != 200 {
			t.Fatalf("status %d\n%s", code, g.logs.String())
		}
		reused = append(reused, body)
	}
	if reused[0] != "." || reused[2] != "r" || reused[3] != "r" {
		t.Errorf("$ssl_session_reused of 4 new connections: %q, want the later ones resumed", reused)
	}
}

// TestNginxUpstreamFailures: a wrong CA, nginx's certificate expired, a
// name that does not match: 502, and a log line naming the upstream and
// the reason; a client certificate nginx does not trust: its 400, which
// nginx answers itself.
func TestNginxUpstreamFailures(t *testing.T) {
	p := newPKI(t)
	good := startNginxTLS(t, p, p.server)
	expired := startNginxTLS(t, p, p.expired)
	cases := []struct {
		name   string
		n      *nginxTLS
		tls    string
		status int
		why    string
	}{
		{"wrong CA", good, fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.otherCA.file, p.client.certFile, p.client.keyFile), 502, "certificate signed by unknown authority"},
		{"expired", expired, "", 502, "certificate has expired"},
		{"name mismatch", good, fmt.Sprintf("{server_name: other.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.client.certFile, p.client.keyFile), 502, "not other.test"},
		{"untrusted client", good, fmt.Sprintf("{server_name: app.test, ca: %s, certificate: %s, key: %s}", p.serverCA.file, p.strangeClient.certFile, p.strangeClient.keyFile), 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := startGale(t, nginxRoute(p, tc.n, 8, tc.tls))
			if code, _ := g.get(newClient(), "/f1"); code != tc.status {
				t.Fatalf("status %d, want %d\n%s", code, tc.status, g.logs.String())
			}
			if tc.why == "" {
				return
			}
			eventually(t, 3*time.Second, "the failure logged", func() bool {
				return strings.Contains(g.logs.String(), "upstream failed")
			})
			found := false
			for _, l := range strings.Split(g.logs.String(), "\n") {
				found = found || strings.Contains(l, "upstream failed") && strings.Contains(l, "https://"+tc.n.addr) && strings.Contains(l, tc.why)
			}
			if !found {
				t.Errorf("no log line names the upstream and %q:\n%s", tc.why, g.logs.String())
			}
		})
	}
}

// TestNginxUpstreamAuto: protocol: auto speaks HTTP/2 to an nginx that
// offers it and HTTP/1.1 to one that does not, files compared byte for
// byte, as nginx's log says ($server_protocol).
func TestNginxUpstreamAuto(t *testing.T) {
	p := newPKI(t)
	for _, h2 := range []bool{false, true} {
		n := startNginx(t, p, p.server, h2)
		g := startGale(t, fmt.Sprintf("routes:\n  - path: /\n    proxy: {to: \"https://%s\", protocol: auto, tls: {server_name: app.test, ca: %s, certificate: %s, key: %s}}\n",
			n.addr, p.serverCA.file, p.client.certFile, p.client.keyFile))
		c := newClient()
		for name, want := range n.files {
			code, got := g.get(c, name)
			if code != 200 || got != string(want) {
				t.Fatalf("h2 %v %s: status %d, %d of %d bytes\n%s", h2, name, code, len(got), len(want), g.logs.String())
			}
		}
		proto := map[bool]string{false: " HTTP/1.1 ", true: " HTTP/2.0 "}[h2]
		for _, l := range n.accessLog(t) {
			if !strings.Contains(l, proto) || !strings.Contains(l, "client=SUCCESS") {
				t.Fatalf("h2 %v: want every request over%sverified:\n%s", h2, proto, strings.Join(n.accessLog(t), "\n"))
			}
		}
	}
}
