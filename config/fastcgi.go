package config

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FastCGI sends a route's requests to FastCGI applications such as
// PHP-FPM (the fastcgi route kind, and the php preset).
type FastCGI struct {
	To             []Upstream     // at least one, in file order, no two alike ("unix:/run/php/fpm.sock", "127.0.0.1:9000")
	Root           string         // absolute after Load; DOCUMENT_ROOT, under which SCRIPT_FILENAME is found; must exist
	SplitPath      []string       // default [".php"]: the path is split after the first of these (ASCII case-insensitive) that ends a segment, into the script and PATH_INFO; empty (not nil) = the whole path is the script
	Index          string         // default "index.php": the script of a path that ends in "/"
	Env            []EnvVar       // user-defined variables, in file order, after the CGI ones (which they may not replace)
	LoadBalancing  string         // "round-robin" (default) | "least-connections"
	MaxConns       int            // default 4: connections to each server over all event loops together; requests beyond wait for one
	KeepAlive      bool           // default true: connections stay open between requests (FCGI_KEEP_CONN) until Timeouts.Idle
	Timeouts       ProxyTimeouts  // connect (default 2s), response_header (default 60s: from the request to the end of the CGI head, and the longest pause between two reads of the body), idle (default 60s)
	Passive        PassiveHealth  // health_check.passive: failures of real requests take a server out
	Retries        int            // default 1, 0..10: further servers tried for a request whose connect failed
	TrustedProxies []netip.Prefix // masked; clients whose X-Forwarded-For gives REMOTE_ADDR; nil = none
	PHP            bool           // the php preset: Route.Static serves every path that is not a script (see README)
}

// EnvVar is one user-defined variable of fastcgi.env.
type EnvVar struct {
	Name, Value string
}

// FastCGI defaults, as documented on the fields.
const (
	defaultFastCGIConns = 4 // PHP-FPM's default pool has pm.max_children = 5
	maxFastCGIConns     = 1 << 16
	maxEnvVars          = 256
)

// defaultFastCGI returns a FastCGI with every default but To and Root.
func defaultFastCGI() *FastCGI {
	return &FastCGI{
		SplitPath:     []string{".php"},
		Index:         "index.php",
		LoadBalancing: "round-robin",
		MaxConns:      defaultFastCGIConns,
		KeepAlive:     true,
		Retries:       defaultProxyRetries,
		Timeouts:      defaultUpstreamTimeouts(60*time.Second, 60*time.Second),
		Passive:       defaultPassiveHealth(),
	}
}

// fastcgi decodes a fastcgi route, or with php set the php preset (whose
// script extension and index are fixed: .php and index.php).
func (d *decoder) fastcgi(n *yaml.Node, path string, php bool) *FastCGI {
	f := defaultFastCGI()
	f.PHP = php
	keys := fastcgiKeys
	if php {
		keys = phpKeys
	}
	s := d.section(n, path, keys.names()...)
	if s == nil {
		return nil
	}
	if v := d.required(s, path, "to", `to: "unix:/run/php/php8.2-fpm.sock"`); v != nil {
		f.To = d.fastcgiServers(v, join(path, "to"))
	}
	if v := d.required(s, path, "root", `root: ./public`); v != nil {
		p := join(path, "root")
		if root, ok := d.str(v, p); ok {
			f.Root = d.resolve(root)
			if msg := checkDir(f.Root, root); root == "" || msg != "" {
				d.errorf(deref(v), p, "%s", cmpOr(msg, `expected a directory path such as "./public"`))
			}
		}
	}
	d.fastcgiScripts(s, path, f)
	d.setEnum(s, "load_balancing", &f.LoadBalancing, keys.options("load_balancing")...)
	d.setCount(s, "max_conns", &f.MaxConns, 1, maxFastCGIConns)
	d.setBool(s, "keep_alive", &f.KeepAlive)
	d.upstreamTimeouts(s, &f.Timeouts, fastcgiTimeoutsKeys.names())
	if v := s.get("health_check"); v != nil {
		d.fastcgiHealth(v, join(path, "health_check"), &f.Passive)
	}
	d.retriesAndTrust(s, path, &f.Retries, &f.TrustedProxies)
	if v := s.get("env"); v != nil {
		f.Env = d.fastcgiEnv(v, join(path, "env"))
	}
	return f
}

// fastcgiServers decodes fastcgi.to: upstreams as proxy.to takes them,
// but no URLs (FastCGI is not HTTP).
func (d *decoder) fastcgiServers(n *yaml.Node, path string) []Upstream {
	items := []*yaml.Node{deref(n)}
	if deref(n).Kind == yaml.SequenceNode {
		items = deref(n).Content
	}
	for i, item := range items {
		if item = deref(item); item.Kind == yaml.ScalarNode && strings.Contains(item.Value, "://") {
			ip := path
			if len(items) > 1 || deref(n).Kind == yaml.SequenceNode {
				ip = index(path, i)
			}
			d.errorf(item, ip, `expected a FastCGI server such as "unix:/run/php/php-fpm.sock" or "127.0.0.1:9000", got %s`, quote(item.Value))
			return nil
		}
	}
	return d.upstreams(n, path)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fastcgiScripts decodes split_path and index (fastcgi routes only).
func (d *decoder) fastcgiScripts(s *section, path string, f *FastCGI) {
	if v := s.get("split_path"); v != nil {
		p := join(path, "split_path")
		if items, ok := d.list(v, p, "extensions"); ok {
			f.SplitPath = []string{}
			d.eachString(items, p, func(item *yaml.Node, ip, ext string) {
				if len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "./\\%?#\x00 ") {
					d.errorf(item, ip, `expected an extension such as ".php", got %s`, quote(ext))
					return
				}
				f.SplitPath = append(f.SplitPath, strings.ToLower(ext))
			})
		}
	}
	if v, p, name, ok := d.strKey(s, path, "index"); ok {
		if !isFileName(name) {
			d.errorf(deref(v), p, `expected a file name such as "index.php" (no slashes), got %s`, quote(name))
		} else {
			f.Index = name
		}
	}
}

// fastcgiHealth decodes health_check, which holds passive health only:
// active checks are not built for FastCGI servers.
func (d *decoder) fastcgiHealth(n *yaml.Node, path string, p *PassiveHealth) {
	s := d.section(n, path, fastcgiHealthKeys.names()...)
	if s == nil {
		return
	}
	d.passiveHealth(s, p)
}

// reservedEnv are the variables the server sets itself: env may not
// replace them (HTTP_* comes from the request's fields).
var reservedEnv = []string{"SCRIPT_FILENAME", "SCRIPT_NAME", "PATH_INFO", "PATH_TRANSLATED", "DOCUMENT_ROOT",
	"DOCUMENT_URI", "REQUEST_URI", "QUERY_STRING", "REQUEST_METHOD", "CONTENT_TYPE", "CONTENT_LENGTH",
	"REMOTE_ADDR", "REMOTE_PORT", "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "SERVER_ADDR", "HTTPS",
	"SSL_PROTOCOL", "GATEWAY_INTERFACE", "SERVER_SOFTWARE", "REQUEST_SCHEME", "HTTP_HOST"}

// fastcgiEnv decodes env: variable name -> value.
func (d *decoder) fastcgiEnv(n *yaml.Node, path string) []EnvVar {
	list, _ := d.pairs(n, path)
	var out []EnvVar
	for _, e := range list {
		p := join(path, e.key.Value)
		name := e.key.Value
		switch {
		case !envName(name):
			d.errorf(e.key, p, `expected a variable name of letters, digits and "_" not starting with a digit, got %s`, quote(name))
			continue
		case slices.Contains(reservedEnv, name) || strings.HasPrefix(name, "HTTP_"):
			d.errorf(e.key, p, "%s is set by the server from the request; choose another name", name)
			continue
		case len(out) >= maxEnvVars:
			d.errorf(e.key, p, "at most %d variables", maxEnvVars)
			continue
		}
		v, ok := d.str(e.val, p)
		if !ok {
			continue
		}
		if strings.ContainsRune(v, 0) {
			d.errorf(deref(e.val), p, "a value may not hold a NUL byte")
			continue
		}
		out = append(out, EnvVar{Name: name, Value: v})
	}
	return out
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// phpStatic is the static side of the php preset: files under the root,
// index.php before index.html, and Caddy's php_fastcgi try_files (the
// file, the directory's index.php, then the front controller /index.php).
func phpStatic(root string) *Static {
	st := defaultStatic()
	st.Root = root
	st.Index = []string{"index.php", "index.html"}
	for _, raw := range []string{"{path}", "{path}/index.php", "/index.php"} {
		t, _ := ParseTemplate(raw, 0, nil)
		st.TryFiles = append(st.TryFiles, t)
	}
	return st
}
