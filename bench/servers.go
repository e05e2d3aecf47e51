package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// installHint is printed when a tool is missing.
const installHint = "apt-get install nginx caddy lighttpd h2o varnish wrk nghttp2-client"

// knownServers lists the servers the harness can drive, in default order.
var knownServers = []string{"gale", "nginx", "caddy", "lighttpd", "h2o", "varnish"}

// galeB is a second gale binary (-gale-b-bin) measured beside gale with
// the same config, in the same interleaved rounds: an A/B of two builds
// whose "gale ÷ server" column is the per-round ratio of A to B. It is
// never in the default -servers list.
const galeB = "gale-b"

// setting is one key of gale's server: block, as YAML text.
type setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// serverEnv is what a config generator needs for one measurement.
type serverEnv struct {
	Fixtures *fixtureSet
	Dir      string // measurement directory: config, logs, temp files
	Port     int    // 127.0.0.1 port to listen on
	Upstream string // host:port of the proxy upstream
	// TLSUpstream is host:port of the upstream's TLS 1.3 listener for the
	// TLSUp workloads ("" otherwise): the proxy route goes there instead,
	// verifying the bench certificate (Cert).
	TLSUpstream string
	// UpChurn keeps no upstream connection: each proxied request dials
	// (the peers' upstream keep-alive off).
	UpChurn bool
	// Cache puts the server's shared HTTP cache in front of the upstream's
	// /cached/ paths (the pcache workloads).
	Cache    bool
	FPM      string    // the PHP-FPM pool's unix socket ("" without php workloads)
	Redis    string    // host:port of the harness's redis-server ("" without ratelimit-cluster)
	Workers  int       // worker processes / event loops / GOMAXPROCS
	Pool     int       // upstream keep-alive connections to keep idle
	Settings []setting // gale server: overrides (sweep)
	Proto    string    // the workload's Proto: "" HTTP/1.1, "h2" over TLS 1.3, "h2c"
	Cert     *benchCert
	// UserConfig is the user's own gale config (sweep -config); gale then
	// runs it with the bench's listen address and the variant's settings.
	UserConfig string
	// MetricsPort is gale's metrics listener's 127.0.0.1 port (0: none),
	// scraped for its per-loop counters before and after the run.
	MetricsPort int
}

// launch is how to start a server for one measurement.
type launch struct {
	Argv   []string // program and arguments (taskset is added by startProc)
	Env    []string // added environment
	Config string   // path of the generated config file
	// MetricsURL is where gale serves its metrics ("" for the peers).
	MetricsURL string
}

// serverSpec is one server under test.
type serverSpec struct {
	Name    string
	Bin     string // absolute path of the binary
	Version string // as reported by the binary
	SHA256  string // of the binary
}

// findBinary looks a server binary up on PATH and in the usual sbin
// directories (PATH of a non-root shell often lacks them).
func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// commandOutput runs a short command and returns its combined output's
// first line.
func commandOutput(argv ...string) string {
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// serverVersion asks a server binary for its version.
func serverVersion(name, bin string) string {
	switch name {
	case "nginx", "lighttpd", "h2o":
		return commandOutput(bin, "-v")
	case "caddy", "gale", galeB:
		return commandOutput(bin, "version")
	case "varnish":
		return commandOutput(bin, "-V")
	}
	return ""
}

// fileSHA256 returns the hex SHA-256 of a file's content ("" on error).
func fileSHA256(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return sha256Hex(b)
}

// prepare writes the server's config for workload w into e.Dir and returns
// how to start it.
func (s *serverSpec) prepare(e serverEnv, w workload) (launch, error) {
	if w.RateLimit != "" && s.Name != "gale" && s.Name != galeB {
		return launch{}, fmt.Errorf("%w: %s measures gale's rate_limit scopes (gale only)", errUnsupported, w.ID)
	}
	switch s.Name {
	case "gale", galeB:
		return s.prepareGale(e, w)
	case "nginx":
		return s.prepareNginx(e)
	case "caddy":
		if e.Cache {
			return launch{}, fmt.Errorf("%w: Caddy caches only with a plugin (cache-handler), which the bench does not build", errUnsupported)
		}
		return s.prepareCaddy(e)
	case "varnish":
		return s.prepareVarnish(e)
	case "lighttpd", "h2o":
		if e.Cache {
			return launch{}, fmt.Errorf("%w: the bench does not configure a cache in %s", errUnsupported, s.Name)
		}
		if e.TLSUpstream != "" {
			return launch{}, fmt.Errorf("%w: the bench does not configure %s's TLS to upstreams", errUnsupported, s.Name)
		}
		if s.Name == "h2o" {
			return s.prepareH2O(e)
		}
		return s.prepareLighttpd(e)
	}
	return launch{}, fmt.Errorf("bench: unknown server %q", s.Name)
}

// galeConfig renders gale's YAML config. It contains only the routes the
// workload needs, so that a route kind gale does not serve yet makes only
// that workload fail ("not supported"), not every workload.
func galeConfig(e serverEnv, w workload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by bench for workload %s\n", w.ID)
	switch e.Proto {
	case "h2":
		// gale advertises in ALPN what it serves, so while it serves no
		// HTTP/2 the handshake with h2load, which offers only h2, fails.
		fmt.Fprintf(&b, "listen:\n  - address: \"127.0.0.1:%d\"\n    tls:\n      certificates: [{cert: %q, key: %q}]\n      min_version: \"1.3\"\n",
			e.Port, e.Cert.CertFile, e.Cert.KeyFile)
	default:
		fmt.Fprintf(&b, "listen: [\"127.0.0.1:%d\"]\n", e.Port)
	}
	if e.MetricsPort > 0 {
		fmt.Fprintf(&b, "metrics: {listen: \"127.0.0.1:%d\"}\n", e.MetricsPort)
	}
	rlRoute, rlTop := galeRateLimit(e, w)
	b.WriteString(rlTop)
	b.WriteString("server:\n")
	base := []setting{{"event_loops", fmt.Sprint(e.Workers)}, {"reuse_port", "true"}}
	for _, s := range e.Settings {
		if s.Key == "load_balancing" {
			// The accepting reactor only balances without SO_REUSEPORT.
			base = setSetting(base, "reuse_port", "false")
		}
	}
	for _, s := range e.Settings {
		base = setSetting(base, s.Key, s.Value)
	}
	for _, s := range base {
		fmt.Fprintf(&b, "  %s: %s\n", s.Key, s.Value)
	}
	b.WriteString("routes:\n")
	fmt.Fprintf(&b, "  - path: /\n%s    static:\n      root: %q\n", rlRoute, e.Fixtures.Root)
	// gzip-js needs no key: app.js.gz sits next to app.js, and gale serves
	// precompressed sidecars by default (compress.encodings defaults to
	// zstd, br, gzip).
	if w.Respond {
		fmt.Fprintf(&b, "  - path: /respond\n    respond: {status: 200, body: %q}\n", respondBody)
	}
	switch {
	case w.Cache:
		// As a user writes it: the cache's defaults, the proxy's pool.
		fmt.Fprintf(&b, "  - path: %s\n    cache: {}\n    proxy: {to: [%q], max_idle_per_upstream: %d, max_conns: %d}\n", cachedPrefix, e.Upstream, e.Pool, e.Pool)
	case w.Proxy && e.TLSUpstream != "":
		idle := e.Pool
		if e.UpChurn {
			idle = 0
		}
		fmt.Fprintf(&b, "  - path: /proxy/\n    proxy:\n      to: [%q]\n      tls: {ca: %q}\n      strip_prefix: true\n      max_idle_per_upstream: %d\n      max_conns: %d\n",
			"https://"+e.TLSUpstream, e.Cert.CertFile, idle, e.Pool)
	case w.Proxy:
		fmt.Fprintf(&b, "  - path: /proxy/\n    proxy: {to: [%q], strip_prefix: true, max_idle_per_upstream: %d, max_conns: %d}\n", e.Upstream, e.Pool, e.Pool)
	}
	if w.PHP {
		fmt.Fprintf(&b, "  - path: /php/\n    fastcgi: {to: [%q], root: %q, max_conns: %d}\n", "unix:"+e.FPM, e.Fixtures.Root, fpmConns)
	}
	return b.String()
}

// setSetting replaces key's value in list, or appends it.
func setSetting(list []setting, key, value string) []setting {
	for i := range list {
		if list[i].Key == key {
			list[i].Value = value
			return list
		}
	}
	return append(list, setting{key, value})
}

func (s *serverSpec) prepareGale(e serverEnv, w workload) (launch, error) {
	path := filepath.Join(e.Dir, "gale.yaml")
	text := galeConfig(e, w)
	if e.UserConfig != "" {
		var err error
		if text, err = galeUserConfig(e); err != nil {
			return launch{}, err
		}
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return launch{}, err
	}
	l := launch{Argv: []string{s.Bin, "serve", "-c", path}, Config: path}
	if e.MetricsPort > 0 {
		l.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d%s", e.MetricsPort, metricsPath(text))
	}
	return l, nil
}

// metricsPath returns the metrics.path of a gale config's text, or gale's
// default.
func metricsPath(text string) string {
	var c struct {
		Metrics struct {
			Path string `yaml:"path"`
		} `yaml:"metrics"`
	}
	if yaml.Unmarshal([]byte(text), &c) != nil || c.Metrics.Path == "" {
		return "/metrics"
	}
	return c.Metrics.Path
}

// nginxConfig renders nginx.conf: its own prefix, pid and temp paths under
// dir, so it never touches a system nginx.
func nginxConfig(e serverEnv, version string) string {
	var phpUp, phpLoc string
	if e.FPM != "" {
		phpUp, phpLoc = nginxPHP(e.FPM)
	}
	userLine := ""
	if u, err := user.Current(); err == nil {
		// Workers of a root master would otherwise run as nobody.
		userLine = fmt.Sprintf("user %s;\n", u.Username)
	}
	return fmt.Sprintf(`# generated by bench
daemon off;
master_process on;
%sworker_processes %d;
worker_rlimit_nofile 65536;
pid %[3]s/nginx.pid;
error_log %[3]s/error.log error;
events {
    worker_connections 16384;
    use epoll;
}
http {
    access_log off;
    server_tokens off;
    types {
        text/plain txt;
        application/javascript js;
        application/octet-stream bin;
    }
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 1000000000;
    open_file_cache max=10000 inactive=60s;
    open_file_cache_valid 1s;
    open_file_cache_min_uses 1;
    open_file_cache_errors on;
    client_body_temp_path %[3]s/client_body;
    proxy_temp_path %[3]s/proxy;
    fastcgi_temp_path %[3]s/fastcgi;
    uwsgi_temp_path %[3]s/uwsgi;
    scgi_temp_path %[3]s/scgi;
    upstream bench_upstream {
        server %[4]s;
        keepalive %[5]d;
        keepalive_requests 1000000000;
        keepalive_timeout 120s;
    }
    %[10]s%[13]s
    server {
        %[9]s
        root %[7]s;
        %[11]s
        location = /respond {
            default_type text/plain;
            return 200 %[8]q;
        }
        %[14]s
        location /proxy/ {
            %[12]s
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location / {
            gzip_static on;
            gzip_vary on;
        }
    }
}
`, userLine, e.Workers, e.Dir, e.Upstream, e.Pool, e.Port, e.Fixtures.Root, respondBody, nginxListen(e, version), phpUp+nginxTLSUpstream(e), phpLoc, nginxProxyPass(e), nginxCachePath(e), nginxCacheLocation(e))
}

// nginxCachePath renders the proxy_cache_path of the pcache workloads
// ("" otherwise): a zone for keys in shared memory, bodies in files under
// the run directory (written through the page cache), no temp path copy.
func nginxCachePath(e serverEnv) string {
	if !e.Cache {
		return ""
	}
	return fmt.Sprintf("\n    proxy_cache_path %s levels=1:2 keys_zone=bench:10m max_size=256m inactive=60m use_temp_path=off;",
		filepath.Join(e.Dir, "proxy_cache"))
}

// nginxCacheLocation renders the location of the upstream's /cached/
// paths, proxied as they are through proxy_cache ("" without a cache).
func nginxCacheLocation(e serverEnv) string {
	if !e.Cache {
		return ""
	}
	return `location ` + cachedPrefix + ` {
            proxy_pass http://bench_upstream;
            proxy_cache bench;
            proxy_cache_valid 200 10m;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }`
}

// nginxTLSUpstream renders the upstream block of the TLS listener, kept
// alive like the cleartext one ("" without one).
func nginxTLSUpstream(e serverEnv) string {
	if e.TLSUpstream == "" {
		return ""
	}
	if e.UpChurn {
		return fmt.Sprintf("upstream bench_upstream_tls {\n        server %s;\n    }", e.TLSUpstream)
	}
	return fmt.Sprintf(`upstream bench_upstream_tls {
        server %s;
        keepalive %d;
        keepalive_requests 1000000000;
        keepalive_timeout 120s;
    }`, e.TLSUpstream, e.Pool)
}

// nginxProxyPass renders the proxy location's proxy_pass and, to the TLS
// upstream, verification of the bench certificate (whose names are
// localhost and 127.0.0.1; nginx checks a host name, not an address),
// TLS 1.3 (not among nginx's default proxy_ssl_protocols before 1.23.4)
// and session reuse (nginx's default, named).
func nginxProxyPass(e serverEnv) string {
	if e.TLSUpstream == "" {
		return "proxy_pass http://bench_upstream/;"
	}
	return fmt.Sprintf(`proxy_pass https://bench_upstream_tls/;
            proxy_ssl_trusted_certificate %s;
            proxy_ssl_verify on;
            proxy_ssl_name localhost;
            proxy_ssl_protocols TLSv1.2 TLSv1.3;
            proxy_ssl_session_reuse on;`, e.Cert.CertFile)
}

// nginxListen renders the listen directive of the server block and, for
// HTTP/2, the directives that go with it. nginx 1.25.1 moved HTTP/2 from a
// listen parameter to "http2 on"; the one matching the binary is used.
// TLS 1.3 is named explicitly: before 1.23.4 nginx does not enable it by
// default.
func nginxListen(e serverEnv, version string) string {
	listen := fmt.Sprintf("listen 127.0.0.1:%d", e.Port)
	if e.Proto == "" {
		return listen + " reuseport;"
	}
	ssl := ""
	if e.Proto == "h2" {
		ssl = " ssl"
	}
	var b strings.Builder
	if nginxHasHTTP2Directive(version) {
		fmt.Fprintf(&b, "%s%s reuseport;\n        http2 on;", listen, ssl)
	} else {
		fmt.Fprintf(&b, "%s%s http2 reuseport;", listen, ssl)
	}
	if e.Proto == "h2" {
		fmt.Fprintf(&b, "\n        ssl_certificate %s;\n        ssl_certificate_key %s;\n        ssl_protocols TLSv1.3;", e.Cert.CertFile, e.Cert.KeyFile)
	}
	return b.String()
}

// nginxHasHTTP2Directive reports whether an nginx -v line names a version
// of 1.25.1 or later, which has the "http2" directive.
func nginxHasHTTP2Directive(version string) bool {
	_, v, ok := strings.Cut(version, "nginx/")
	if !ok {
		return false
	}
	var major, minor, patch int
	if n, _ := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); n < 2 {
		return false
	}
	return major > 1 || major == 1 && (minor > 25 || minor == 25 && patch >= 1)
}

func (s *serverSpec) prepareNginx(e serverEnv) (launch, error) {
	path := filepath.Join(e.Dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(nginxConfig(e, s.Version)), 0o644); err != nil {
		return launch{}, err
	}
	argv := []string{s.Bin, "-p", e.Dir, "-e", filepath.Join(e.Dir, "error.log"), "-c", path}
	return launch{Argv: argv, Config: path}, nil
}

// caddyConfig renders Caddy's JSON config: admin endpoint off, config not
// persisted, only error logs, no access logs.
func caddyConfig(e serverEnv) ([]byte, error) {
	type obj = map[string]any
	server := obj{
		"listen":          []string{fmt.Sprintf("127.0.0.1:%d", e.Port)},
		"automatic_https": obj{"disable": true},
		"routes": []obj{
			{
				"match":    []obj{{"path": []string{"/respond"}}},
				"handle":   []obj{{"handler": "static_response", "status_code": 200, "body": respondBody, "headers": obj{"Content-Type": []string{"text/plain; charset=utf-8"}}}},
				"terminal": true,
			},
			{
				"match": []obj{{"path": []string{"/proxy/*"}}},
				"handle": []obj{
					{"handler": "rewrite", "strip_path_prefix": "/proxy"},
					caddyProxy(e),
				},
				"terminal": true,
			},
			{
				"handle": []obj{{"handler": "file_server", "root": e.Fixtures.Root,
					"precompressed": obj{"gzip": obj{}}, "precompressed_order": []string{"gzip"}}},
			},
		},
	}
	if e.FPM != "" {
		routes := server["routes"].([]obj)
		server["routes"] = append([]obj{caddyPHP(e.Fixtures.Root, e.FPM)}, routes...)
	}
	apps := obj{"http": obj{"servers": obj{"bench": server}}}
	switch e.Proto {
	case "h2":
		// The bench certificate, loaded from its files and chosen by tag
		// whatever the SNI; no HTTP/3 listener beside it.
		server["protocols"] = []string{"h1", "h2"}
		server["tls_connection_policies"] = []obj{{"certificate_selection": obj{"any_tag": []string{"bench"}}, "protocol_min": "tls1.3"}}
		apps["tls"] = obj{"certificates": obj{"load_files": []obj{{"certificate": e.Cert.CertFile, "key": e.Cert.KeyFile, "tags": []string{"bench"}}}}}
	case "h2c":
		server["protocols"] = []string{"h1", "h2c"}
	}
	cfg := obj{
		"admin":   obj{"disabled": true, "config": obj{"persist": false}},
		"logging": obj{"logs": obj{"default": obj{"level": "ERROR"}}},
		"apps":    apps,
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// caddyProxy is the reverse_proxy handler, to the TLS upstream when there
// is one: Caddyfile's transport http { tls_trusted_ca_certs CERT }.
func caddyProxy(e serverEnv) map[string]any {
	type obj = map[string]any
	transport := obj{"protocol": "http", "keep_alive": obj{"enabled": true, "max_idle_conns_per_host": e.Pool, "max_idle_conns": e.Pool}}
	dial := e.Upstream
	if e.TLSUpstream != "" {
		dial = e.TLSUpstream
		transport["tls"] = obj{"root_ca_pem_files": []string{e.Cert.CertFile}}
		if e.UpChurn {
			transport["keep_alive"] = obj{"enabled": false}
		}
	}
	return obj{"handler": "reverse_proxy", "upstreams": []obj{{"dial": dial}}, "transport": transport}
}

func (s *serverSpec) prepareCaddy(e serverEnv) (launch, error) {
	path := filepath.Join(e.Dir, "caddy.json")
	b, err := caddyConfig(e)
	if err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return launch{}, err
	}
	env := []string{
		fmt.Sprintf("GOMAXPROCS=%d", e.Workers),
		"HOME=" + e.Dir,
		"XDG_CONFIG_HOME=" + filepath.Join(e.Dir, "xdg-config"),
		"XDG_DATA_HOME=" + filepath.Join(e.Dir, "xdg-data"),
	}
	return launch{Argv: []string{s.Bin, "run", "--config", path}, Env: env, Config: path}, nil
}

// lighttpdConfig renders lighttpd.conf. lighttpd runs as one process.
func lighttpdConfig(e serverEnv) string {
	host, port, _ := strings.Cut(e.Upstream, ":")
	return fmt.Sprintf(`# generated by bench
server.document-root = %q
server.bind = "127.0.0.1"
server.port = %d
server.pid-file = %q
server.errorlog = %q
server.modules = ("mod_deflate", "mod_proxy")
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = 120
server.max-fds = 16384
server.max-connections = 8192
server.stat-cache-engine = "simple"
server.network-backend = "sendfile"
server.event-handler = "linux-sysepoll"
mimetype.assign = (".txt" => "text/plain", ".js" => "text/javascript", ".bin" => "application/octet-stream", "" => "application/octet-stream")
deflate.mimetypes = ("text/javascript")
deflate.allowed-encodings = ("gzip")
deflate.cache-dir = %q
$HTTP["url"] =~ "^/proxy/" {
  proxy.server = ("" => (("host" => %q, "port" => %s)))
  proxy.header = ("map-urlpath" => ("/proxy/" => "/"))
}
`, e.Fixtures.Root, e.Port, filepath.Join(e.Dir, "lighttpd.pid"), filepath.Join(e.Dir, "error.log"),
		filepath.Join(e.Dir, "deflate-cache"), host, port)
}

// errUnsupported marks a workload a server cannot be configured for: the
// measurement is reported as not supported, with the reason.
var errUnsupported = errors.New("not supported")

// lighttpdH2Min is the first lighttpd release with HTTP/2 (1.4.56, where
// it still had to be enabled with server.h2proto).
var lighttpdH2Min = [3]int{1, 4, 56}

// lighttpdVersion parses a "lighttpd/1.4.69 (ssl) ..." line.
func lighttpdVersion(v string) ([3]int, bool) {
	var out [3]int
	_, rest, ok := strings.Cut(v, "lighttpd/")
	if !ok {
		return out, false
	}
	n, _ := fmt.Sscanf(rest, "%d.%d.%d", &out[0], &out[1], &out[2])
	return out, n == 3
}

// lighttpdH2Config is what lighttpdConfig appends for an HTTP/2 workload:
// HTTP/2 enabled, and for "h2" TLS 1.3 only with the bench certificate
// (mod_openssl, packaged apart as lighttpd-mod-openssl on Debian).
func lighttpdH2Config(e serverEnv) string {
	s := "server.feature-flags += (\"server.h2proto\" => \"enable\")\n"
	if e.Proto == "h2" {
		s += fmt.Sprintf("server.modules += (\"mod_openssl\")\nssl.engine = \"enable\"\nssl.pemfile = %q\nssl.privkey = %q\n"+
			"ssl.openssl.ssl-conf-cmd = (\"MinProtocol\" => \"TLSv1.3\")\n", e.Cert.CertFile, e.Cert.KeyFile)
	}
	return s
}

func (s *serverSpec) prepareLighttpd(e serverEnv) (launch, error) {
	conf := lighttpdConfig(e)
	if e.Proto != "" {
		v, ok := lighttpdVersion(s.Version)
		if !ok || slices.Compare(v[:], lighttpdH2Min[:]) < 0 {
			return launch{}, fmt.Errorf("%w: %q has no HTTP/2 (it came in lighttpd 1.4.56)", errUnsupported, s.Version)
		}
		conf += lighttpdH2Config(e)
	}
	path := filepath.Join(e.Dir, "lighttpd.conf")
	if err := os.MkdirAll(filepath.Join(e.Dir, "deflate-cache"), 0o755); err != nil {
		return launch{}, err
	}
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return launch{}, err
	}
	return launch{Argv: []string{s.Bin, "-D", "-f", path}, Config: path}, nil
}

// fairnessNotes describes, per server, how it is configured: printed with
// every report so the comparison can be judged.
func fairnessNotes(name string, workers, pool int) []string {
	switch name {
	case galeB:
		return []string{"a second gale binary (-gale-b-bin) with gale's config, for an A/B of two builds"}
	case "gale":
		return []string{
			fmt.Sprintf("server.event_loops %d, reuse_port true (one SO_REUSEPORT listener per loop)", workers),
			"access log off (gale's default: access_log.path \"\")",
			"keep-alive: no per-connection request limit",
			"static: file cache with defaults (files up to 1 MiB in memory, revalidated every 1s)",
			"gzip-js: precompressed sidecar app.js.gz (static defaults, no compress: key)",
			fmt.Sprintf("respond: respond route; proxy: proxy route with strip_prefix, gale's per-loop upstream keep-alive pool of %d (max_idle_per_upstream) and max_conns %d: requests beyond wait for a pooled connection (nginx's open-source upstream module has no such queue)", pool, pool),
			fmt.Sprintf("php-hello: fastcgi route, max_conns %d (kept connections, FCGI_KEEP_CONN)", fpmConns),
			"proxy-tls-*: the same route to https://127.0.0.1:PORT with tls: {ca: the bench certificate} (verified; TLS session tickets as always); proxy-tls-churn-*: max_idle_per_upstream 0",
			fmt.Sprintf("ratelimit-*: the static route with rate_limit {rate: %s, burst: %d} (never reached), scope local or cluster; cluster.redis is the harness's redis-server on the client CPUs, whose CPU time is recorded apart (redis_cpu_us_per_req), not as gale's", benchRate, benchBurst),
			"h2-*: a TLS listener (min_version 1.3, the bench certificate); measured only where gale negotiates h2 in ALPN (h2c: answers the prior-knowledge preface), otherwise not supported",
			"metrics: a listener of its own on 127.0.0.1 (net/http, off the event loops), scraped only before and after the measured run, outside its CPU readings",
			"pcache-*: a proxy route on /cached/ with cache: {} (the shared HTTP cache's defaults, in memory) and the same pool; the upstream sends Cache-Control: max-age=3600",
		}
	case "nginx":
		return []string{
			fmt.Sprintf("worker_processes %d, listen ... reuseport, epoll", workers),
			"access_log off; sendfile on; tcp_nopush on; tcp_nodelay on",
			"keepalive_requests 1000000000 (effectively unlimited), keepalive_timeout 120s",
			"open_file_cache max=10000 inactive=60s, open_file_cache_valid 1s, min_uses 1, errors on",
			"gzip-js: gzip_static on (precompressed app.js.gz), gzip_vary on",
			"respond: return 200 \"hello world\\n\"",
			fmt.Sprintf("proxy: upstream keepalive %d per worker, proxy_http_version 1.1, Connection \"\"", pool),
			fmt.Sprintf("php-hello: fastcgi_pass to an upstream with keepalive %d (below the pool's %d workers), fastcgi_keep_conn on, Debian's fastcgi_params", nginxFPMCache, fpmChildren),
			"proxy-tls-*: proxy_pass https:// to an upstream block with the same keepalive, proxy_ssl_trusted_certificate (the bench certificate), proxy_ssl_verify on, proxy_ssl_name localhost, proxy_ssl_protocols TLSv1.2 TLSv1.3, proxy_ssl_session_reuse on; proxy-tls-churn-*: the upstream block without keepalive",
			"h2-*: listen ... ssl http2 (http2 on from 1.25.1), ssl_protocols TLSv1.3, the bench certificate; h2c: listen ... http2 without ssl; HTTP/2 settings at nginx's defaults",
			"pcache-*: proxy_cache_path under the run directory (levels=1:2 keys_zone=bench:10m max_size=256m inactive=60m use_temp_path=off), proxy_cache bench, proxy_cache_valid 200 10m, the same upstream keepalive",
		}
	case "varnish":
		return []string{
			"varnishd -F -a 127.0.0.1:PORT -b UPSTREAM -s malloc,256m -n RUNDIR/varnish: the built-in VCL, thread pools at their defaults (not pinned to -workers; taskset limits them to the server CPUs)",
			"pcache-* only (HTTP/1.1; Varnish has no TLS); the upstream sends Cache-Control: max-age=3600",
		}
	case "caddy":
		return []string{
			fmt.Sprintf("GOMAXPROCS=%d; JSON config; admin endpoint disabled, config not persisted", workers),
			"no access logs (server logs not configured), default logger at ERROR",
			"keep-alive: no per-connection request limit (Go net/http)",
			"gzip-js: file_server precompressed gzip (app.js.gz sidecar)",
			"respond: static_response handler",
			fmt.Sprintf("proxy: reverse_proxy, HTTP transport keep-alive, max_idle_conns_per_host %d", pool),
			"proxy-tls-*: the same reverse_proxy with transport http tls root_ca_pem_files (Caddyfile: tls_trusted_ca_certs) the bench certificate; proxy-tls-churn-*: keep_alive enabled false",
			"php-hello: reverse_proxy with the fastcgi transport (root, split_path .php), as php_fastcgi sets it up; a connection per request",
			"h2-*: protocols h1, h2 (no HTTP/3), tls_connection_policies protocol_min tls1.3 with the bench certificate from load_files; h2c: protocols h1, h2c",
		}
	case "lighttpd":
		return []string{
			"one process (lighttpd is single-process by design; server.max-worker not used)",
			"no access log (mod_accesslog not loaded); network backend sendfile; stat-cache simple",
			"server.max-keep-alive-requests 65535 (lighttpd's maximum; effectively unlimited for these run lengths), max-keep-alive-idle 120",
			"gzip-js: mod_deflate with deflate.cache-dir (compressed once, then served from the cache)",
			"respond: a static 12-byte file named /respond (mod_magnet is not installed)",
			"proxy: mod_proxy with map-urlpath; no upstream keep-alive (mod_proxy opens one upstream connection per request)",
			"h2-*: server.feature-flags server.h2proto enable (from 1.4.56; older versions: not supported), mod_openssl with MinProtocol TLSv1.3 and the bench certificate",
		}
	case "h2o":
		return []string{
			fmt.Sprintf("num-threads %d; no access log (access-log not configured); max-connections 16384", workers),
			"static: file.dir (h2o's own open-file cache); gzip-js: file.send-compressed ON (precompressed app.js.gz)",
			"respond: an mruby.handler returning [200, {content-type: text/plain}, [\"hello world\\n\"]] (h2o has no configured-response directive)",
			"proxy: proxy.reverse.url, h2o's upstream keep-alive (proxy.timeout.keepalive default 2 s)",
			"h2-*: listen ssl with minimum-version TLSv1.3, ocsp-update-interval 0, the bench certificate; h2c: the cleartext listener (prior knowledge is accepted there); HTTP/2 settings at h2o's defaults",
		}
	}
	return nil
}
