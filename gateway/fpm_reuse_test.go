package gateway_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echoScript answers the length and digest of the body PHP read.
const echoScript = `<?php $b = file_get_contents('php://input'); echo strlen($b), ' ', hash('sha256', $b);`

// digestOf is what echoScript answers for body.
func digestOf(body []byte) string {
	sum := sha256.Sum256(body)
	return strconv.Itoa(len(body)) + " " + hex.EncodeToString(sum[:])
}

// startEchoSite runs one event loop and one PHP-FPM worker, so that every
// request after the first goes over the same pooled FastCGI connection.
func startEchoSite(t *testing.T) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{dir: dir, root: filepath.Join(dir, "www")}
	writeFiles(t, s.root, map[string]string{"echo.php": echoScript})
	s.fpm = startFPM(t, dir, "a", false, 1)
	s.gale = startGale(t, dir, `
server: {event_loops: 1}
routes:
  - path: /
    fastcgi:
      to: "`+s.fpm.listen+`"
      root: www
`, nil)
	return s
}

// postRaw writes one POST of body on conn in the pieces split gives, and
// reads its response.
func postRaw(t *testing.T, conn net.Conn, br *bufio.Reader, body []byte, expect bool, split func(int) []int) (int, string) {
	t.Helper()
	head := "POST /echo.php HTTP/1.1\r\nHost: x\r\nCookie: secret=head-bytes\r\nContent-Type: application/octet-stream\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n"
	if expect {
		head += "Expect: 100-continue\r\n"
	}
	head += "\r\n"
	msg := append([]byte(head), body...)
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if expect {
		if _, err := conn.Write(msg[:len(head)]); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("interim: %v", err)
		}
		if resp.StatusCode != 100 {
			t.Fatalf("interim %d", resp.StatusCode)
		}
		msg = msg[len(head):]
	}
	for _, n := range split(len(msg)) {
		if _, err := conn.Write(msg[:n]); err != nil {
			t.Fatal(err)
		}
		msg = msg[n:]
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("response: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("response body: %v", err)
	}
	return resp.StatusCode, string(got)
}

// TestFPMBodiesOnReusedConn sends request bodies of many sizes in a row
// on one client connection, each over the same pooled FastCGI
// connection, whole, head then body, and trickled, with and without
// Expect: 100-continue, and checks that PHP read every body byte for
// byte.
func TestFPMBodiesOnReusedConn(t *testing.T) {
	s := startEchoSite(t)
	rng := rand.New(rand.NewPCG(1, 2))
	whole := func(n int) []int { return []int{n} }
	trickle := func(n int) []int {
		var parts []int
		for n > 0 {
			k := min(n, 1+rng.IntN(9000))
			parts = append(parts, k)
			n -= k
		}
		return parts
	}
	sizes := []int{1, 4, 100, 16<<10 - 1, 64 << 10, 1 << 20}
	conns := make([]net.Conn, 2) // interleaved clients on the one loop
	brs := make([]*bufio.Reader, 2)
	for i := range conns {
		c, err := net.Dial("tcp", s.gale.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i], brs[i] = c, bufio.NewReader(c)
	}
	n := 0
	for round := 0; round < 2; round++ {
		for _, size := range sizes {
			for _, expect := range []bool{false, true} {
				for si, split := range []func(int) []int{whole, trickle} {
					body := make([]byte, size)
					for i := range body {
						body[i] = byte('a' + rng.IntN(26))
					}
					c := n % 2
					n++
					status, got := postRaw(t, conns[c], brs[c], body, expect, split)
					if want := digestOf(body); status != 200 || got != want {
						t.Fatalf("request %d (size %d, expect %v, split %d, client %d): %d %q, want %q", n, size, expect, si, c, status, got, want)
					}
				}
			}
		}
	}
}

// TestFPMFormPostsOnReusedConn is a login form as an application sees
// it: several url-encoded POSTs in a row through net/http's kept-alive
// connection, each parsed by PHP into $_POST.
func TestFPMFormPostsOnReusedConn(t *testing.T) {
	s := startEchoSite(t)
	writeFiles(t, s.root, map[string]string{"login.php": `<?php echo $_POST['user'] ?? '-', ':', $_POST['pass'] ?? '-';`})
	c := httpClient()
	for i := 0; i < 6; i++ {
		form := fmt.Sprintf("user=u%d&pass=p%d", i, i)
		resp, err := c.Post(s.gale.url("/login.php"), "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("u%d:p%d", i, i); string(b) != want {
			t.Fatalf("post %d: %q, want %q", i, b, want)
		}
	}
}
