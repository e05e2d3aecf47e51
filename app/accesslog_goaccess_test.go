package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GoAccess, with its CADDY log format, reads gale's JSON access log: every
// line is a valid request, with its path, status class and user agent.
func TestAccessLogGoAccess(t *testing.T) {
	goaccess, err := exec.LookPath("goaccess")
	if err != nil {
		t.Skip("goaccess not installed (Debian package goaccess)")
	}
	logPath := filepath.Join(t.TempDir(), "access.log")
	cfg := fmt.Sprintf(`access_log: {path: %q, format: json}
routes:
  - path: /hello
    respond: {status: 200, body: "hello\n"}
  - path: /
    static: {root: ./site}
`, logPath)
	ts := startServer(t, cfg, map[string]string{"a.txt": "file a\n"})
	for range 3 {
		do(t, "GET", ts.url("/hello"), "", 200)
	}
	do(t, "GET", ts.url("/a.txt"), "", 200)
	do(t, "POST", ts.url("/hello"), "body", 200)
	do(t, "GET", ts.url("/missing"), "", 404)
	const n = 6
	waitUntil(5*time.Second, func() bool { // the loop hands its lines over every sweep
		data, _ := os.ReadFile(logPath)
		return strings.Count(string(data), "\n") >= n
	})
	report := filepath.Join(t.TempDir(), "report.json")
	if out, err := exec.Command(goaccess, "--log-format=CADDY", "--no-global-config", "-o", report, logPath).CombinedOutput(); err != nil {
		t.Fatalf("goaccess: %v\n%s", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		General struct {
			Total  int `json:"total_requests"`
			Valid  int `json:"valid_requests"`
			Failed int `json:"failed_requests"`
		}
		Requests struct {
			Data []struct {
				Data string
				Hits struct{ Count int }
			}
		}
		Static struct {
			Data []struct {
				Data string
				Hits struct{ Count int }
			}
		} `json:"static_requests"`
		StatusCodes struct {
			Data []struct {
				Data string
				Hits struct{ Count int }
			}
		} `json:"status_codes"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	if r.General.Total != n || r.General.Valid != n || r.General.Failed != 0 {
		t.Fatalf("goaccess read %d lines, %d valid, %d failed; want %d valid", r.General.Total, r.General.Valid, r.General.Failed, n)
	}
	hits := map[string]int{} // (GET and POST of one path are two entries)
	for _, d := range r.Requests.Data {
		hits[d.Data] += d.Hits.Count
	}
	for _, d := range r.Static.Data {
		hits[d.Data] += d.Hits.Count
	}
	if hits["/hello"] != 4 || hits["/a.txt"] != 1 {
		t.Errorf("requests %v, want /hello 4 and /a.txt 1", hits)
	}
	classes := map[string]int{}
	for _, d := range r.StatusCodes.Data {
		classes[d.Data[:1]] = d.Hits.Count
	}
	if classes["2"] != 5 || classes["4"] != 1 {
		t.Errorf("status panel %v", classes)
	}
}
