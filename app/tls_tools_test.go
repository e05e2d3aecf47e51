package app

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Interoperability with the TLS stacks most clients use: curl and
// openssl s_client (OpenSSL). The tests skip when a tool is missing
// (.ci/run installs both).

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed; skipping (install the Debian package %q)", name, name)
	}
	return p
}

// runTool runs a command with stdin, bounded in time, and returns its
// combined output.
func runTool(t *testing.T, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// writeRootCA writes the test root (only) for the tools to trust.
func (ts *tlsTestServer) writeRootCA(t *testing.T) string {
	p := filepath.Join(ts.dir, "root-ca.pem")
	if err := os.WriteFile(p, ts.ca.rootPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTLSCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl")
	ts := startTLSServer(t, tlsOnly, nil, nil)
	ca := ts.writeRootCA(t)
	_, port, _ := net.SplitHostPort(ts.tlsAddr)
	url := "https://localhost:" + port + "/hello"
	for _, tc := range []struct {
		name    string
		args    []string
		version string
	}{
		{"TLSv1.2", []string{"--tlsv1.2", "--tls-max", "1.2"}, "TLSv1.2"},
		{"TLSv1.3", []string{"--tlsv1.3"}, "TLSv1.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-sS", "-v", "--http1.1", "--cacert", ca, "--resolve", "localhost:" + port + ":127.0.0.1"}, tc.args...)
			args = append(args, url, url) // two requests: the second reuses the connection
			out, err := runTool(t, "", curl, args...)
			if err != nil {
				t.Fatalf("curl: %v\n%s", err, out)
			}
			if !strings.Contains(out, "SSL connection using "+tc.version) {
				t.Errorf("no %s connection:\n%s", tc.version, out)
			}
			if strings.Count(out, "hello\n") != 2 || !strings.Contains(out, "ALPN: server accepted http/1.1") {
				t.Errorf("want two responses over http/1.1:\n%s", out)
			}
			if !strings.Contains(out, "Re-using existing connection") {
				t.Errorf("the second request did not reuse the connection:\n%s", out)
			}
		})
	}
}

func TestTLSOpenSSL(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl")
	ts := startTLSServer(t, tlsOnly, nil, nil)
	ca := ts.writeRootCA(t)
	req := "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
	for _, version := range []string{"-tls1_2", "-tls1_3"} {
		t.Run(version, func(t *testing.T) {
			sess := filepath.Join(t.TempDir(), "session.pem")
			base := []string{"s_client", "-connect", ts.tlsAddr, "-servername", "localhost", "-CAfile", ca,
				"-verify_return_error", version, "-ign_eof"}
			out, err := runTool(t, req, openssl, append(base, "-showcerts", "-sess_out", sess)...)
			if err != nil {
				t.Fatalf("openssl: %v\n%s", err, out)
			}
			if !strings.Contains(out, "Verify return code: 0 (ok)") {
				t.Errorf("chain not verified:\n%s", out)
			}
			if n := strings.Count(out, "-----BEGIN CERTIFICATE-----"); n != 2 {
				t.Errorf("-showcerts shows %d certificates, want 2 (leaf and intermediate):\n%s", n, out)
			}
			if !strings.Contains(out, "\r\n\r\nhello\n") {
				t.Errorf("no response:\n%s", out)
			}
			// Resume the session.
			out, err = runTool(t, req, openssl, append(base, "-sess_in", sess)...)
			if err != nil {
				t.Fatalf("openssl (resume): %v\n%s", err, out)
			}
			if !strings.Contains(out, "Reused, TLSv1.") || !strings.Contains(out, "\r\n\r\nhello\n") {
				t.Errorf("session not resumed:\n%s", out)
			}
		})
	}
}
