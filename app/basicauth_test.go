package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestBasicAuth: a route with basic_auth answers 401 with the challenge
// without credentials, with a wrong password and for an unknown user,
// and serves once they verify (off the loop, then from the remembered
// set); the credentials stop at gale unless forward_authorization says
// otherwise; an htpasswd file works with curl -u; HTTP/2 is served the
// same; logins in parallel all get their answer while another route
// keeps answering.
func TestBasicAuth(t *testing.T) {
	t.Parallel()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	up := netUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "authorization=%q", r.Header.Get("Authorization"))
	}))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte("# staff\nbob:"+hash("bob-pw")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
  - path: /private/
    basic_auth: {users: {alice: "`+hash("alice-pw")+`"}}
    proxy: {to: ["`+up+`"]}
  - path: /fwd/
    basic_auth: {users: {alice: "`+hash("alice-pw")+`"}, forward_authorization: true}
    proxy: {to: ["`+up+`"]}
  - path: /staff/
    basic_auth: {realm: staff, htpasswd: `+filepath.Join(dir, "htpasswd")+`}
    respond: {status: 200, body: "staff\n"}
  - path: /
    respond: {status: 200, body: "open\n"}
`, nil)
	get := func(c *http.Client, path, user, pw string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.url(path), nil)
		if user != "" {
			req.SetBasicAuth(user, pw)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for name, c := range map[string]*http.Client{"h1": client(), "h2c": h2cClient(t)} {
		for _, bad := range [][2]string{{"", ""}, {"alice", "wrong"}, {"mallory", "alice-pw"}, {"alice", ""}} {
			resp, _ := get(c, "/private/x", bad[0], bad[1])
			if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="gale", charset="UTF-8"` {
				t.Errorf("%s: %q/%q: %d %q", name, bad[0], bad[1], resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
		for i := 0; i < 2; i++ { // verified, then remembered
			if resp, body := get(c, "/private/x", "alice", "alice-pw"); resp.StatusCode != 200 || body != `authorization=""` {
				t.Errorf("%s: alice %d: %d %q", name, i, resp.StatusCode, body)
			}
		}
		for pw, want := range map[string]int{"nope": 401, "alice-pw": 200} {
			req, _ := http.NewRequest("POST", ts.url("/private/post"), strings.NewReader(strings.Repeat("b", 100000)))
			req.SetBasicAuth("alice", pw)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s: POST: %v", name, err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: POST with password %q: %d, want %d", name, pw, resp.StatusCode, want)
			}
		}
		if resp, body := get(c, "/fwd/x", "alice", "alice-pw"); resp.StatusCode != 200 || !strings.HasPrefix(body, `authorization="Basic `) {
			t.Errorf("%s: forwarded: %d %q", name, resp.StatusCode, body)
		}
		if resp, _ := get(c, "/staff/", "", ""); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="staff", charset="UTF-8"` {
			t.Errorf("%s: staff realm: %d %v", name, resp.StatusCode, resp.Header)
		}
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-sS", "--max-time", "10", "-u", "bob:bob-pw", ts.url("/staff/")).CombinedOutput()
		if err != nil || string(out) != "staff\n" {
			t.Errorf("curl -u: %v %q", err, out)
		}
	}
	// Logins in parallel, each a verification, beside open requests.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 20; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			req, _ := http.NewRequest("GET", ts.url("/private/p"), nil)
			req.SetBasicAuth("alice", fmt.Sprintf("guess-%d", i))
			resp, err := client().Do(req)
			if err != nil || resp.StatusCode != 401 {
				errs <- fmt.Errorf("login %d: %v %v", i, err, resp)
			}
			if resp != nil {
				resp.Body.Close()
			}
		}(i)
		go func() {
			defer wg.Done()
			resp, err := client().Get(ts.url("/open"))
			if err != nil || resp.StatusCode != 200 {
				errs <- fmt.Errorf("open: %v %v", err, resp)
			}
			if resp != nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
