package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string // substring of the error, "" = ok
	}{
		{"0", 0, ""},
		{"65536", 65536, ""},
		{"512B", 512, ""},
		{"1KiB", 1024, ""},
		{"64KiB", 64 << 10, ""},
		{"10MiB", 10 << 20, ""},
		{"2GiB", 2 << 30, ""},
		{"1KB", 1000, ""},
		{"1kB", 1000, ""},
		{"3MB", 3_000_000, ""},
		{"4GB", 4_000_000_000, ""},
		{"10 MiB", 10 << 20, ""},
		{"8589934591GiB", 8589934591 << 30, ""},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"", 0, "expected a size"},
		{"lots", 0, `got "lots"`},
		{"-1", 0, "expected a size"},
		{"+1", 0, "expected a size"},
		{"1.5MiB", 0, "whole number"},
		{"10mb", 0, "units:"},
		{"10 mb", 0, "units:"},
		{"10  MiB", 0, "units:"},
		{"10 ", 0, "expected a size"},
		{"10MiB ", 0, "units:"},
		{" 10", 0, "expected a size"},
		{"1TiB", 0, "units:"},
		{"9223372036854775808", 0, "too large"},
		{"8589934592GiB", 0, "too large"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseSize(%q) = error %v, want %d", tt.in, err, tt.want)
		case tt.err == "" && got != tt.want:
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		case tt.err != "" && err == nil:
			t.Errorf("ParseSize(%q) = %d, want error containing %q", tt.in, got, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), tt.err):
			t.Errorf("ParseSize(%q) error %q does not contain %q", tt.in, err, tt.err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1: "1B", 1000: "1000B", 1024: "1KiB", 1536: "1536B", 3 << 20: "3MiB", 1 << 30: "1GiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10s", 10 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"250ms", 250 * time.Millisecond, true},
		{"1.5s", 1500 * time.Millisecond, true},
		{"10us", 10 * time.Microsecond, true},
		{"10µs", 10 * time.Microsecond, true},
		{"5ns", 5, true},
		{"0s", 0, true}, // grammar only; positivity is checked by the decoder
		{"ten", 0, false},
		{"10", 0, false},
		{"10 s", 0, false},
		{"1d", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, msg := parseDuration(tt.in)
		if (msg == "") != tt.ok || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %q; want %v, ok=%v", tt.in, got, msg, tt.want, tt.ok)
		}
		if msg != "" && !strings.HasPrefix(msg, durationExample) {
			t.Errorf("parseDuration(%q) message %q does not give an example", tt.in, msg)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want string // want "" = error
	}{
		{"example.com", "example.com"},
		{"Example.COM", "example.com"},
		{"example.com.", "example.com"},
		{"example.com:8080", "example.com"},
		{"EXAMPLE.com.:443", "example.com"},
		{"*.example.com", "*.example.com"},
		{"*.Example.COM.:80", "*.example.com"},
		{"*.com", "*.com"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1:8080", "127.0.0.1"},
		{"[::1]", "[::1]"},
		{"[::1]:8443", "[::1]"},
		{"[2001:DB8::1]", "[2001:db8::1]"},
		{"xn--mnchen-3ya.de", "xn--mnchen-3ya.de"},
		{"_acme.example.com", "_acme.example.com"},
		{"a-b.c", "a-b.c"},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},

		{"", ""},
		{".", ""},
		{"*", ""},
		{"*.", ""},
		{"*.*.example.com", ""},
		{"a.*.example.com", ""},
		{"foo*.example.com", ""},
		{"*example.com", ""},
		{"a..b", ""},
		{".example.com", ""},
		{"example.com..", ""},
		{"-a.com", ""},
		{"a-.com", ""},
		{"exa mple.com", ""},
		{"exa/mple.com", ""},
		{"münchen.de", ""},
		{"::1", ""},
		{"[::1", ""},
		{"[::1]x", ""},
		{"[::1]:", ""},
		{"[1.2.3.4]", ""},
		{"[fe80::1%eth0]", ""},
		{"example.com:", ""},
		{"example.com:http", ""},
		{"example.com:+80", ""},
		{"example.com:65536", ""},
		{strings.Repeat("a", 64) + ".com", ""},
		{strings.Repeat("a.", 127) + "ab", ""},
	}
	for _, tt := range tests {
		got, err := NormalizeHost(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("NormalizeHost(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		// Normal forms are fixed points.
		if again, err := NormalizeHost(got); err != nil || again != got {
			t.Errorf("NormalizeHost(%q) = %q, %v; not a fixed point", got, again, err)
		}
	}
}

func TestCheckAddress(t *testing.T) {
	good := []string{":8080", ":0", "127.0.0.1:8080", "0.0.0.0:80", "[::1]:8080", "[::]:443", "localhost:65535", "example.com:1", "[fe80::1%lo]:80"}
	bad := []string{"", "8080", ":", "127.0.0.1", "127.0.0.1:", ":65536", ":-1", ":+80", ":http", "::1:80", "[::1]", "a b:80", "[zz]:80", "unix:/run/gale.sock"}
	for _, a := range good {
		if msg := checkAddress(a); msg != "" {
			t.Errorf("checkAddress(%q) = %q, want ok", a, msg)
		}
	}
	for _, a := range bad {
		if msg := checkAddress(a); msg == "" {
			t.Errorf("checkAddress(%q) = ok, want an error", a)
		}
	}
}

func TestCheckRoutePath(t *testing.T) {
	good := []string{"/", "/a", "/a/", "/a/b", "/a/b/", "/a.b", "/.well-known/", "/%20", "/a..b", "/~user/"}
	bad := []string{"", "a", "a/", "//", "/a//b", "/./", "/a/./", "/../", "/a/..", "/a b", "/a\tb", "/a?b", "/a#b", "/a\x00", "/a\x7f"}
	for _, p := range good {
		if msg := checkRoutePath(p); msg != "" {
			t.Errorf("checkRoutePath(%q) = %q, want ok", p, msg)
		}
	}
	for _, p := range bad {
		if msg := checkRoutePath(p); msg == "" {
			t.Errorf("checkRoutePath(%q) = ok, want an error", p)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	goodNames := []string{"X-Env", "x", "Content-Security-Policy", "a!#$%&'*+-.^_`|~1"}
	badNames := []string{"", "X Env", "X:Env", "X(", "Ü", "a\r", "a\n", "a\x00", "\"a\""}
	for _, n := range goodNames {
		if msg := checkHeaderName(n); msg != "" {
			t.Errorf("checkHeaderName(%q) = %q, want ok", n, msg)
		}
	}
	for _, n := range badNames {
		if msg := checkHeaderName(n); msg == "" {
			t.Errorf("checkHeaderName(%q) = ok, want an error", n)
		}
	}
	goodValues := []string{"", "a", "max-age=60", "a\tb", "a b", "\x80\xff", `"quoted"`}
	badValues := []string{"a\r", "a\nb", "\r\n", "a\x00", "\x01", "a\x7f", " a", "a ", "\ta"}
	for _, v := range goodValues {
		if msg := checkHeaderValue(v); msg != "" {
			t.Errorf("checkHeaderValue(%q) = %q, want ok", v, msg)
		}
	}
	for _, v := range badValues {
		if msg := checkHeaderValue(v); msg == "" {
			t.Errorf("checkHeaderValue(%q) = ok, want an error", v)
		}
	}
}

func TestCheckMediaType(t *testing.T) {
	good := []string{"text/plain", "text/plain; charset=utf-8", "application/manifest+json", "image/svg+xml", "application/vnd.ms-fontobject"}
	bad := []string{"", "text", "text/", "/plain", "text/x/y", "text/plain;", "text/plain; charset", "text plain", "text/plain\r\n"}
	for _, v := range good {
		if msg := checkMediaType(v); msg != "" {
			t.Errorf("checkMediaType(%q) = %q, want ok", v, msg)
		}
	}
	for _, v := range bad {
		if msg := checkMediaType(v); msg == "" {
			t.Errorf("checkMediaType(%q) = ok, want an error", v)
		}
	}
}

func TestCheckRedirectTarget(t *testing.T) {
	good := []string{"/", "/new/", "/a?b=c#d", "https://example.com", "http://example.com:8080/x", "https://[::1]/"}
	bad := []string{"", "new/", "//evil.example/", `/\evil.example`, "ftp://example.com/", "https://", "javascript:alert(1)", "/a b", "/a\r\n", "https://user:pw@example.com/"}
	for _, v := range good {
		if msg := checkRedirectTarget(v); msg != "" {
			t.Errorf("checkRedirectTarget(%q) = %q, want ok", v, msg)
		}
	}
	for _, v := range bad {
		if msg := checkRedirectTarget(v); msg == "" {
			t.Errorf("checkRedirectTarget(%q) = ok, want an error", v)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"root", "index", "hidden", "follow_symlinks", "cache_control"}
	tests := map[string]string{
		"rooot":           "root",
		"Root":            "root",
		"roo":             "root",
		"hiden":           "hidden",
		"follow-symlinks": "follow_symlinks",
		"folow_symlink":   "follow_symlinks",
		"cachecontrol":    "cache_control",
		"indx":            "index",
		"xyz":             "",
		"browse":          "",
		"r":               "",
	}
	for in, want := range tests {
		if got := suggest(in, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
	if d := editDistance("lsiten", "listen"); d != 1 {
		t.Errorf("editDistance(lsiten, listen) = %d, want 1 (one swap)", d)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "gale.yaml", Line: 3, Col: 7, Key: "routes[2].static.root", Msg: "bad"}, "gale.yaml:3:7: routes[2].static.root: bad"},
		{Error{File: "gale.yaml", Line: 3, Col: 7, Msg: "YAML syntax: x"}, "gale.yaml:3:7: YAML syntax: x"},
		{Error{Line: 3, Col: 7, Key: "listen", Msg: "bad"}, "3:7: listen: bad"},
		{Error{Key: "root", Msg: "bad"}, "root: bad"},
		{Error{File: "gale.yaml", Msg: "bad"}, "gale.yaml: bad"},
		{Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorListSortedAndUnwrapped(t *testing.T) {
	_, err := Parse([]byte("routes: [{path: x, respond: {}}]\nserver: {idle: 1}\nlisten: 80\n"), "c.yaml")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	want := strings.Join([]string{
		`c.yaml:1:17: routes[0].path: expected a path starting with "/", got "x"`,
		`c.yaml:2:10: server.idle: unknown key "idle" (expected one of: event_loops, reuse_port, load_balancing, lock_os_thread, edge_triggered, read_buffer, write_buffer, max_buffered_output, socket_recv_buffer, socket_send_buffer, tcp_no_delay, server_header, trusted_proxies, limits, timeouts, http2, http3, encoded_slashes)`,
		`c.yaml:3:9: listen: expected a string, got an integer (80); quote it to make it a string: "80"`,
	}, "\n")
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	var one *Error
	if !errors.As(err, &one) || one.Line != 1 || one.Col != 17 || one.Key != "routes[0].path" {
		t.Errorf("errors.As(*Error) = %+v", one)
	}
}

// writeFile writes a file under dir, creating directories, and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadResolvesAgainstFileDir checks that relative paths resolve against
// the config file's directory, not the working directory.
func TestLoadResolvesAgainstFileDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "conf/site/index.html", "hi\n")
	path := writeFile(t, dir, "conf/gale.yaml", `listen: ["127.0.0.1:0"]
access_log: {path: logs.txt}
routes:
  - path: /
    static: {root: ./site}
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	confDir := filepath.Join(dir, "conf")
	if cfg.File != path || cfg.Dir != confDir {
		t.Errorf("File, Dir = %q, %q; want %q, %q", cfg.File, cfg.Dir, path, confDir)
	}
	if got, want := cfg.Routes[0].Static.Root, filepath.Join(confDir, "site"); got != want {
		t.Errorf("root = %q, want %q", got, want)
	}
	if got, want := cfg.AccessLog.Path, filepath.Join(confDir, "logs.txt"); got != want {
		t.Errorf("access_log.path = %q, want %q", got, want)
	}
	if cfg.Server.EventLoops != runtime.NumCPU() {
		t.Errorf("event_loops = %d, want NumCPU %d", cfg.Server.EventLoops, runtime.NumCPU())
	}

	// The same file with a missing root reports the path as given.
	bad := writeFile(t, dir, "conf/bad.yaml", "listen: \":0\"\nroutes: [{path: /, static: {root: nope}}]\n")
	_, err = Load(bad)
	if err == nil || !strings.HasPrefix(err.Error(), bad+":2:35: routes[0].static.root: directory \"nope\" does not exist") {
		t.Errorf("Load(bad) = %v", err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
	var list ErrorList
	if errors.As(err, &list) {
		t.Errorf("Load(missing) returned an ErrorList: %v", err)
	}
	big := writeFile(t, t.TempDir(), "big.yaml", "# "+strings.Repeat("x", MaxFileBytes)+"\n")
	if _, err := Load(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Load(big) = %v, want ErrTooLarge", err)
	}
}

func TestParseWithoutFileUsesWorkingDir(t *testing.T) {
	cfg, err := Parse([]byte("listen: \":0\"\nroutes: [{path: /, static: {root: testdata/site}}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if cfg.File != "" || cfg.Dir != wd || cfg.Routes[0].Static.Root != filepath.Join(wd, "testdata", "site") {
		t.Errorf("File, Dir, Root = %q, %q, %q", cfg.File, cfg.Dir, cfg.Routes[0].Static.Root)
	}
	_, err = Parse([]byte("listen: 1\nroutes: [{path: /, respond: {}}]\n"), "")
	if err == nil || !strings.HasPrefix(err.Error(), "1:9: listen: ") {
		t.Errorf("error without a file = %v, want it to start with LINE:COL", err)
	}
}

// TestShippedExample loads the example config of the repository, so that a
// change of either is caught here.
func TestShippedExample(t *testing.T) {
	path := filepath.Join("..", "examples", "gale.yaml")
	if _, err := os.Stat(path); err != nil {
		t.Skip("no examples/gale.yaml")
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Listen) == 0 || len(cfg.Routes) == 0 {
		t.Fatalf("example has no listeners or routes: %+v", cfg)
	}
}

func TestForDirectory(t *testing.T) {
	cfg, err := ForDirectory("testdata/site", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if len(cfg.Listen) != 1 || cfg.Listen[0].Address != "127.0.0.1:0" {
		t.Errorf("Listen = %+v", cfg.Listen)
	}
	if len(cfg.Routes) != 1 {
		t.Fatalf("Routes = %+v", cfg.Routes)
	}
	r := cfg.Routes[0]
	if r.Host != "" || r.Path != "/" || r.Static == nil || r.Static.Root != filepath.Join(wd, "testdata", "site") {
		t.Errorf("route = %+v, static = %+v", r, r.Static)
	}
	if want := defaultStatic(); r.Static.Hidden != want.Hidden || r.Static.FollowSymlinks != want.FollowSymlinks || len(r.Static.Index) != 1 {
		t.Errorf("static defaults not applied: %+v", r.Static)
	}
	if !reflect.DeepEqual(cfg.Server, defaults().Server) {
		t.Errorf("server settings are not the defaults: %+v", cfg.Server)
	}
	if got := cfg.Summary(); strings.Join(got, "\n") != "listen  127.0.0.1:0\nroute   */  static ./testdata/site" {
		t.Errorf("Summary() = %q", got)
	}

	_, err = ForDirectory("testdata/nope", "8080")
	if err == nil || err.Error() != `listen: expected an address such as "127.0.0.1:8080", "[::1]:8080" or ":8080", got "8080"`+"\n"+
		`root: directory "testdata/nope" does not exist (resolved to "`+filepath.Join(wd, "testdata", "nope")+`")` {
		t.Errorf("ForDirectory(bad) = %v", err)
	}
	if _, err := ForDirectory("", ":0"); err == nil {
		t.Error(`ForDirectory("") = ok, want an error`)
	}
	if _, err := ForDirectory("testdata/site/index.html", ":0"); err == nil {
		t.Error("ForDirectory(file) = ok, want an error")
	}
}

func TestSummary(t *testing.T) {
	cfg, err := Parse([]byte(`listen: ["127.0.0.1:8080", "[::1]:8080"]
routes:
  - path: /
    static: {root: ./site}
  - host: Example.com
    path: /hello
    respond: {status: 200, body: "hello from gale\n"}
  - path: /old/
    headers: {response: {set: {X-A: b}}}
    redirect: {to: /, status: 301, keep_path: true}
  - path: /abs/
    static: {root: /}
  - path: /files/
    name: files
    static: {root: /, browse: true}
  - path: /healthz
    health: live
  - path: /app/
    proxy: {to: "dns+srv://_http._tcp.app.internal", load_balancing: header-hash, hash_header: x-user, resolve: {resolver: "127.0.0.1:5353"}}
`), "testdata/summary.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"listen  127.0.0.1:8080",
		"listen  [::1]:8080",
		"route   */                 static ./site",
		"route   example.com/hello  respond 200",
		"route   */old/             redirect 301 / (keep path) (+headers)",
		"route   */abs/             static /",
		"route   */files/ (files)   static / (browse)",
		"route   */healthz          health live",
		"route   */app/             proxy dns+srv://_http._tcp.app.internal (header-hash X-User) resolved every 1s..1m0s (TTL) via 127.0.0.1:5353",
	}
	got := cfg.Summary()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Summary():\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// With the bound addresses, those replace the configured ones.
	got = cfg.Summary("127.0.0.1:8080", "[::1]:41234")
	if got[1] != "listen  [::1]:41234" || got[0] != want[0] {
		t.Errorf("Summary(bound) = %q", got[:2])
	}
}

// TestDefaultsFinite checks the contract that every default is finite and
// every timeout positive.
func TestDefaultsFinite(t *testing.T) {
	c := defaults()
	s := c.Server
	for name, v := range map[string]int64{
		"event_loops": int64(s.EventLoops), "read_buffer": int64(s.ReadBuffer), "write_buffer": int64(s.WriteBuffer),
		"max_buffered_output": int64(s.MaxBufferedOutput), "request_line": int64(s.Limits.RequestLine),
		"header_bytes": int64(s.Limits.HeaderBytes), "body_bytes": s.Limits.BodyBytes,
		"cache.max_bytes": c.Cache.MaxBytes, "cache.max_file_bytes": c.Cache.MaxFileBytes,
		"access_log.max_bytes": c.AccessLog.MaxBytes,
		"timeouts.read_header": int64(s.Timeouts.ReadHeader), "timeouts.read_body": int64(s.Timeouts.ReadBody),
		"timeouts.idle": int64(s.Timeouts.Idle), "timeouts.write": int64(s.Timeouts.Write),
		"timeouts.shutdown": int64(s.Timeouts.Shutdown), "cache.revalidate": int64(c.Cache.Revalidate),
		"cache.negative_ttl":           int64(c.Cache.NegativeTTL),
		"http2.max_concurrent_streams": int64(s.HTTP2.MaxConcurrentStreams), "http2.initial_stream_window": int64(s.HTTP2.InitialStreamWindow),
		"http2.initial_connection_window": int64(s.HTTP2.InitialConnWindow), "http2.max_frame_size": int64(s.HTTP2.MaxFrameSize),
		"http2.max_header_list_size": int64(s.HTTP2.MaxHeaderListSize), "http2.max_requests": int64(s.HTTP2.MaxRequests),
	} {
		if v <= 0 || v > 1<<40 {
			t.Errorf("default %s = %d, want positive and finite", name, v)
		}
	}
}

// TestAliasExpansionBounded feeds a "billion laughs" document: expanding
// its aliases would take 10^9 nodes, and the decoder must stop early.
func TestAliasExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 {\".a\": text/plain}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {<<: [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("listen: \":0\"\nmime_types: {<<: *a9}\nroutes: [{path: /, respond: {}}]\n")
	start := time.Now()
	_, err := Parse([]byte(b.String()), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "after expanding aliases") {
		t.Errorf("Parse(bomb) = %v, want the node budget error", err)
	}
	if len(err.(ErrorList)) > maxErrors+1 {
		t.Errorf("%d errors, want at most %d", len(err.(ErrorList)), maxErrors+1)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Parse(bomb) took %v", d)
	}
}

func TestErrorCountBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("listen: \":0\"\nroutes:\n")
	for range 1000 {
		b.WriteString("  - {path: x}\n")
	}
	_, err := Parse([]byte(b.String()), "many.yaml")
	list, _ := err.(ErrorList)
	if len(list) != maxErrors+1 || !strings.Contains(list[len(list)-1].Msg, "too many errors") {
		t.Errorf("%d errors, last %v; want %d ending with too many errors", len(list), list[len(list)-1], maxErrors+1)
	}
}

// TestGateEntriesAreKnownKeys checks that every entry of notSupportedYet
// names a key the decoder knows: each is rejected as not supported yet, not
// as unknown, and the list of expected keys leaves it out.
func TestGateEntriesAreKnownKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "err_not_supported.golden"))
	if err != nil {
		t.Fatal(err)
	}
	input, _, _ := strings.Cut(string(data), goldenMarker)
	_, err = Parse([]byte(input), "x.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	for pattern, feature := range notSupportedYet {
		if !strings.Contains(err.Error(), "not supported yet: "+feature) {
			t.Errorf("gate %q (%s) not exercised by err_not_supported.golden", pattern, feature)
		}
	}
	if strings.Contains(err.Error(), "unknown key") {
		t.Errorf("a gated key is reported as unknown:\n%v", err)
	}
}

func TestParseConcurrent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "full_example.golden"))
	if err != nil {
		t.Fatal(err)
	}
	input, _, _ := strings.Cut(string(data), goldenMarker)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := Parse([]byte(input), "testdata/full_example.golden"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzParse checks that no input panics and that every outcome is either a
// config or a non-empty ErrorList with positions inside the input.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		input, _, _ := strings.Cut(string(data), goldenMarker)
		f.Add(input)
	}
	f.Fuzz(func(t *testing.T, input string) {
		if len(input) > 1<<16 {
			return
		}
		cfg, err := Parse([]byte(input), filepath.Join("testdata", "fuzz.yaml"))
		if err == nil {
			if cfg == nil || len(cfg.Listen) == 0 || len(cfg.Routes) == 0 {
				t.Fatalf("no error but config %+v", cfg)
			}
			return
		}
		if cfg != nil {
			t.Fatal("both a config and an error")
		}
		list, ok := err.(ErrorList)
		if !ok || len(list) == 0 {
			t.Fatalf("error %T %v", err, err)
		}
		// YAML also breaks lines at a lone CR; counting every CR and LF
		// bounds the number of lines from above.
		lines := strings.Count(input, "\n") + strings.Count(input, "\r") + 2
		for _, e := range list {
			if e.Line < 0 || e.Line > lines || e.Msg == "" {
				t.Fatalf("bad error %+v for %d lines", e, lines)
			}
		}
	})
}

// Port 0 picks a free port per listener: the same ":0" address twice is
// two listeners.
func TestListenPortZeroTwice(t *testing.T) {
	cfg, err := Parse([]byte("listen: [\"127.0.0.1:0\", \"127.0.0.1:0\"]\nroutes:\n  - path: /\n    respond: {}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Listen) != 2 {
		t.Fatalf("%d listeners, want 2", len(cfg.Listen))
	}
}

// TestHTTP2Bounds parses server.http2 at the low end of every range, and
// checks that max_header_list_size follows limits.header_bytes, brought
// within its own range, unless it is set.
func TestHTTP2Bounds(t *testing.T) {
	cases := []struct {
		server string
		want   HTTP2
	}{
		{"{}", defaults().Server.HTTP2},
		{"{http2: {max_concurrent_streams: 1, initial_stream_window: 65535, initial_connection_window: 65535, max_frame_size: 16KiB, max_header_list_size: 1KiB, max_requests: 1}}",
			HTTP2{Enabled: true, MaxConcurrentStreams: 1, InitialStreamWindow: 65535, InitialConnWindow: 65535, MaxFrameSize: 16384, MaxHeaderListSize: 1024, MaxRequests: 1}},
		{"{limits: {header_bytes: 100}}", withHeaderList(1024)},
		{"{limits: {header_bytes: 64MiB}}", withHeaderList(1 << 20)},
		{"{limits: {header_bytes: 20000}, http2: {enabled: true}}", withHeaderList(20000)},
		{"{http2: {max_header_list_size: 2KiB}, limits: {header_bytes: 64KiB}}", withHeaderList(2048)},
	}
	for _, tc := range cases {
		cfg, err := Parse([]byte("listen: \":0\"\nserver: "+tc.server+"\nroutes: [{path: /, respond: {}}]\n"), "")
		if err != nil {
			t.Errorf("server: %s: %v", tc.server, err)
			continue
		}
		if cfg.Server.HTTP2 != tc.want {
			t.Errorf("server: %s: HTTP2 = %+v, want %+v", tc.server, cfg.Server.HTTP2, tc.want)
		}
	}
}

// withHeaderList returns the default HTTP/2 settings with MaxHeaderListSize n.
func withHeaderList(n uint32) HTTP2 {
	h := defaults().Server.HTTP2
	h.MaxHeaderListSize = n
	return h
}
