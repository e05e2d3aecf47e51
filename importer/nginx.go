package importer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gale/importer/nginx"
)

// keptIncludes are include targets the converter understands by name.
var keptIncludes = []string{"fastcgi_params", "fastcgi.conf", "proxy_params", "mime.types", "modules-enabled/*.conf"}

// FromNginx converts the nginx configuration at path (a whole nginx.conf
// or a file of server blocks, such as sites-available/default).
func FromNginx(path string) (*Result, error) {
	ds, err := nginx.ParseFile(path, nginx.Options{Keep: keptIncludes})
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c := &ngxConv{dir: filepath.Dir(abs), output: newOutput(), upstreams: map[string]*nginx.Directive{}, zones: map[string]*nginx.Directive{}}
	c.top(ds)
	if c.settle() {
		c.note(ds, "server", "no server block; the config answers 404")
	}
	return c.result(path, Nginx)
}

type ngxConv struct {
	output
	dir         string
	upstreams   map[string]*nginx.Directive
	zones       map[string]*nginx.Directive
	gzip        bool // gzip on somewhere in http
	defaultType string
	fcgiPass    string // the current server's .php FastCGI address
}

func (c *ngxConv) note(at any, directive, why string, args ...any) {
	n := Note{Directive: directive, Why: fmt.Sprintf(why, args...)}
	switch d := at.(type) {
	case *nginx.Directive:
		n.File, n.Line = d.File, d.Line
	case []*nginx.Directive:
		if len(d) > 0 {
			n.File, n.Line = d[0].File, d[0].Line
		}
	}
	c.addNote(n)
}

// unsupported notes d as not carried over.
func (c *ngxConv) unsupported(d *nginx.Directive, why string) {
	c.note(d, d.Name, "%s", why)
}

// mainIgnored are main and events context directives that describe the
// process, which gale configures by itself or not at all.
var mainIgnored = map[string]string{
	"user": "gale runs as the user that starts it", "worker_processes": "gale runs one event loop per CPU (server.event_loops)",
	"pid": "see pid_file", "error_log": "gale logs to stderr (log.level)", "events": "gale's event loops need no settings here",
	"worker_rlimit_nofile": "gale raises its descriptor limit itself", "load_module": "gale has no modules",
}

func (c *ngxConv) top(ds []*nginx.Directive) {
	var servers []*nginx.Directive
	c.collect(ds, &servers, true)
	for _, s := range servers {
		c.server(s, c.isDefault(s, servers))
	}
}

// collect finds upstreams, zones and servers at the top level and in http.
func (c *ngxConv) collect(ds []*nginx.Directive, servers *[]*nginx.Directive, main bool) {
	for _, d := range ds {
		switch d.Name {
		case "http":
			c.collect(d.Block, servers, false)
		case "server":
			*servers = append(*servers, d)
		case "upstream":
			if len(d.Args) == 1 {
				c.upstreams[d.Args[0]] = d
			}
		case "limit_req_zone":
			for _, a := range d.Args {
				if v, ok := strings.CutPrefix(a, "zone="); ok {
					name, _, _ := strings.Cut(v, ":")
					c.zones[name] = d
				}
			}
		case "gzip":
			c.gzip = arg(d, 0) == "on"
		case "default_type":
			c.defaultType = arg(d, 0)
		case "include":
			c.include(d)
		case "sendfile", "tcp_nopush", "tcp_nodelay", "keepalive_timeout", "types_hash_max_size", "server_tokens",
			"gzip_vary", "gzip_proxied", "gzip_comp_level", "gzip_buffers", "gzip_http_version", "gzip_types",
			"ssl_prefer_server_ciphers", "ssl_session_cache", "ssl_session_timeout", "access_log", "server_names_hash_bucket_size":
			c.unsupported(d, "gale's own default applies (see the README)")
		default:
			if why, ok := mainIgnored[d.Name]; ok && main {
				c.unsupported(d, why)
			} else {
				c.unsupported(d, "not carried over")
			}
		}
	}
}

func arg(d *nginx.Directive, i int) string {
	if i < len(d.Args) {
		return d.Args[i]
	}
	return ""
}

// isDefault reports whether s takes the requests no server_name claims:
// it says default_server, or it is the first server and none says so.
func (c *ngxConv) isDefault(s *nginx.Directive, all []*nginx.Directive) bool {
	has := func(x *nginx.Directive) bool {
		for _, d := range x.Block {
			if d.Name == "listen" && len(d.Args) > 0 {
				for _, a := range d.Args[1:] {
					if a == "default_server" || a == "default" {
						return true
					}
				}
			}
		}
		return false
	}
	if has(s) {
		return true
	}
	for _, x := range all {
		if has(x) {
			return false
		}
	}
	return s == all[0]
}

// scope is what a server or location block sets, inherited by the
// locations inside it as nginx inherits it.
type scope struct {
	vars       map[string]string
	root       string
	alias      string
	index      []string
	indexAt    *nginx.Directive
	tryFiles   *nginx.Directive
	ret        *nginx.Directive
	rewrites   []*nginx.Directive
	addHeaders []*nginx.Directive
	proxyHdrs  []*nginx.Directive
	access     []*nginx.Directive
	authBasic  string
	authFile   string
	limitReq   *nginx.Directive
	expires    *nginx.Directive
	gzipStatic bool
	autoindex  bool
	errorPages []*nginx.Directive
	proxyPass  *nginx.Directive
	proxyVer   *nginx.Directive
	proxyTimes map[string]string
	fastcgi    *nginx.Directive
	fcgiIndex  string
	fcgiParams []*nginx.Directive
	defType    string
	at         *nginx.Directive
}

// inherit copies what a location inherits from s. Arrays that nginx
// replaces as a whole when the inner level has any (add_header,
// proxy_set_header, allow/deny) are copied and reset when the inner
// level sets its own (see child).
func (s *scope) inherit(at *nginx.Directive) *scope {
	n := *s
	n.vars = map[string]string{}
	for k, v := range s.vars {
		n.vars[k] = v
	}
	n.ret, n.rewrites, n.proxyPass, n.fastcgi, n.alias = nil, nil, nil, nil, ""
	n.at = at
	return &n
}

// apply reads block's directives into s; nested locations are returned.
func (c *ngxConv) apply(s *scope, block []*nginx.Directive, server bool) []*nginx.Directive {
	var locs []*nginx.Directive
	fresh := map[string]bool{}
	reset := func(name string, list *[]*nginx.Directive) {
		if !fresh[name] {
			*list = nil
			fresh[name] = true
		}
	}
	for _, d := range block {
		d.Args = substVars(d.Args, s.vars)
		switch d.Name {
		case "location":
			locs = append(locs, d)
		case "set":
			if len(d.Args) == 2 && strings.HasPrefix(d.Args[0], "$") && !strings.Contains(d.Args[1], "$") {
				s.vars[d.Args[0][1:]] = d.Args[1]
			} else {
				c.unsupported(d, "only a plain value (no variables) can be carried over")
			}
		case "root":
			s.root = c.abs(arg(d, 0))
		case "alias":
			s.alias = c.abs(arg(d, 0))
		case "index":
			s.index, s.indexAt = d.Args, d
		case "try_files":
			s.tryFiles = d
		case "return":
			s.ret = d
		case "rewrite":
			s.rewrites = append(s.rewrites, d)
		case "add_header":
			reset("add_header", &s.addHeaders)
			s.addHeaders = append(s.addHeaders, d)
		case "proxy_set_header":
			reset("proxy_set_header", &s.proxyHdrs)
			s.proxyHdrs = append(s.proxyHdrs, d)
		case "allow", "deny":
			reset("access", &s.access)
			s.access = append(s.access, d)
		case "auth_basic":
			s.authBasic = arg(d, 0)
		case "auth_basic_user_file":
			s.authFile = c.abs(arg(d, 0))
		case "limit_req":
			s.limitReq = d
		case "expires":
			s.expires = d
		case "gzip_static":
			s.gzipStatic = arg(d, 0) == "on" || arg(d, 0) == "always"
		case "gzip":
			if arg(d, 0) == "on" {
				c.gzip = true
			}
		case "autoindex":
			s.autoindex = arg(d, 0) == "on"
		case "error_page":
			s.errorPages = append(s.errorPages, d)
		case "proxy_pass":
			s.proxyPass = d
		case "proxy_http_version":
			s.proxyVer = d
		case "proxy_connect_timeout", "proxy_read_timeout":
			s.proxyTimes[d.Name] = arg(d, 0)
		case "fastcgi_pass":
			s.fastcgi = d
		case "fastcgi_index":
			s.fcgiIndex = arg(d, 0)
		case "fastcgi_param":
			s.fcgiParams = append(s.fcgiParams, d)
		case "fastcgi_split_path_info":
			// gale splits after ".php" (fastcgi.split_path), which is
			// what the usual ^(.+\.php)(/.+)$ does.
		case "include":
			c.include(d)
		case "default_type":
			s.defType = arg(d, 0)
		case "listen", "server_name", "ssl_certificate", "ssl_certificate_key", "ssl_protocols":
			if !server {
				c.unsupported(d, "not allowed in a location")
			}
		case "access_log", "error_log", "ssl_ciphers", "ssl_prefer_server_ciphers", "ssl_session_cache", "ssl_session_timeout",
			"ssl_dhparam", "ssl_session_tickets", "ssl_stapling", "ssl_stapling_verify", "server_tokens", "charset",
			"client_max_body_size", "keepalive_timeout", "sendfile":
			c.unsupported(d, "gale's own setting applies (see server.limits, log, access_log and listen.tls in the README)")
		default:
			c.unsupported(d, "not carried over")
		}
	}
	return locs
}

// include handles the includes left unread: files whose meaning is known.
func (c *ngxConv) include(d *nginx.Directive) {
	switch filepath.Base(arg(d, 0)) {
	case "fastcgi_params", "fastcgi.conf":
		// gale's FastCGI routes send the standard CGI/1.1 variables.
	case "proxy_params":
		// Host, X-Real-IP, X-Forwarded-For and -Proto: gale's proxy
		// sends the forwarded fields; Host is handled with the others.
	case "mime.types":
	case "*.conf":
		c.unsupported(d, "gale has no dynamic modules")
	default:
		c.unsupported(d, "the included file does not exist here")
	}
}

// substVars replaces $name and ${name} of plain set variables.
func substVars(args []string, vars map[string]string) []string {
	if len(vars) == 0 {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(m string) string {
			name := strings.Trim(m[1:], "{}")
			if v, ok := vars[name]; ok {
				return v
			}
			return m
		})
	}
	return out
}

var varRef = regexp.MustCompile(`\$(\{[A-Za-z0-9_]+\}|[A-Za-z0-9_]+)`)

// abs makes a path from the config absolute, against the config's
// directory (nginx's prefix is where its nginx.conf lives, normally).
func (c *ngxConv) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || strings.Contains(p, "$") {
		return p
	}
	return filepath.Join(c.dir, p)
}

// server converts one server block.
func (c *ngxConv) server(sv *nginx.Directive, isDefault bool) {
	s := &scope{vars: map[string]string{}, index: []string{"index.html"}, proxyTimes: map[string]string{}, at: sv}
	locs := c.apply(s, sv.Block, true)
	c.serverRewrites(s)
	hosts := c.hosts(sv, isDefault)
	redirectOnly, addrs := c.listen(sv, s)
	if redirectOnly {
		return
	}
	if isDefault {
		c.served = append(c.served, served{Note{File: sv.File, Line: sv.Line, Directive: "server"}, addrs})
	}
	for _, host := range hosts {
		c.serverRoutes(sv, s, locs, host)
	}
}

// hosts gives the hosts a server's routes carry: "" (any) for the
// default server, else one per server_name.
func (c *ngxConv) hosts(sv *nginx.Directive, isDefault bool) []string {
	if isDefault {
		return []string{""}
	}
	var out []string
	for _, d := range sv.Block {
		if d.Name != "server_name" {
			continue
		}
		for _, n := range d.Args {
			switch {
			case n == "_" || n == "" || n == `""`:
			case strings.HasPrefix(n, "~"):
				c.note(d, "server_name", "regular expression %s: gale matches exact names and *.example.com", n)
			case strings.HasPrefix(n, "."):
				out = append(out, n[1:], "*"+n)
			case strings.HasSuffix(n, ".*"):
				c.note(d, "server_name", "%s: gale has no wildcard at the end of a name", n)
			default:
				out = append(out, strings.ToLower(n))
			}
		}
	}
	if len(out) == 0 {
		c.note(sv, "server", "has no name gale can match and is not the default server; its routes are left out")
	}
	return out
}

// listen records a server's listeners; it reports whether the server
// only redirects to https (carried as redirect_to_https listeners).
func (c *ngxConv) listen(sv *nginx.Directive, s *scope) (bool, []string) {
	var addrs []string
	tlsAddrs := map[string]bool{}
	h3 := map[string]bool{}
	for _, d := range sv.Block {
		if d.Name != "listen" || len(d.Args) == 0 {
			continue
		}
		a, ok := listenAddr(d.Args[0])
		if !ok {
			c.note(d, "listen", "%s: gale listens on TCP host:port addresses", d.Args[0])
			continue
		}
		for _, o := range d.Args[1:] {
			switch o {
			case "ssl":
				tlsAddrs[a] = true
			case "quic":
				h3[a] = true
			case "default_server", "default", "http2", "reuseport", "ipv6only=on", "ipv6only=off":
			default:
				c.note(d, "listen", "option %s is not carried over", o)
			}
		}
		if strings.HasPrefix(d.Args[0], "[::]") {
			if _, seen := c.listeners[a]; seen || contains(addrs, a) {
				continue // gale's ":port" takes IPv6 as well
			}
		}
		if !contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		addrs = []string{":80"}
	}
	if s.ret != nil && len(tlsAddrs) == 0 && httpsRedirect(s.ret) {
		for _, a := range addrs {
			c.listener(a).set("redirect_to_https", true)
		}
		return true, addrs
	}
	for _, a := range addrs {
		l := c.listener(a)
		if tlsAddrs[a] {
			c.tls(sv, l)
		}
		if h3[a] {
			l.set("http3", true)
		}
	}
	return false, addrs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// httpsRedirect reports whether a return sends every request to the same
// host and URI over https.
func httpsRedirect(d *nginx.Directive) bool {
	if len(d.Args) != 2 || (d.Args[0] != "301" && d.Args[0] != "302" && d.Args[0] != "308" && d.Args[0] != "307") {
		return false
	}
	t := d.Args[1]
	return t == "https://$host$request_uri" || t == "https://$server_name$request_uri" || t == "https://$http_host$request_uri"
}

// listenAddr turns nginx's listen address into host:port.
func listenAddr(a string) (string, bool) {
	if strings.HasPrefix(a, "unix:") {
		return "", false
	}
	if _, err := strconv.Atoi(a); err == nil {
		return ":" + a, true
	}
	if strings.HasPrefix(a, "[::]:") {
		return ":" + a[5:], true
	}
	if strings.HasPrefix(a, "*:") {
		return a[1:], true
	}
	if strings.HasPrefix(a, "[") {
		return a, strings.Contains(a, "]:")
	}
	if !strings.Contains(a, ":") {
		return a + ":80", true
	}
	return a, true
}

// tls adds the server's certificates to listener l.
func (c *ngxConv) tls(sv *nginx.Directive, l *obj) {
	var certs, keys []string
	for _, d := range sv.Block {
		switch d.Name {
		case "ssl_certificate":
			certs = append(certs, c.abs(arg(d, 0)))
		case "ssl_certificate_key":
			keys = append(keys, c.abs(arg(d, 0)))
		case "ssl_protocols":
			if !contains(d.Args, "TLSv1.2") && contains(d.Args, "TLSv1.3") {
				l.sub("tls").set("min_version", "1.3")
			}
		}
	}
	t := l.sub("tls")
	list, _ := t.get("certificates").([]*obj)
	for i := range certs {
		if i >= len(keys) {
			c.note(sv, "ssl_certificate", "%s has no ssl_certificate_key", certs[i])
			continue
		}
		if o := newObj().set("cert", certs[i]).set("key", keys[i]); !containsObj(list, o) {
			list = append(list, o)
		}
	}
	if len(list) == 0 {
		c.note(sv, "listen", "ssl without ssl_certificate: gale needs a certificate; the listener is plain")
		l.del("tls")
		return
	}
	t.set("certificates", list)
}

// serverRewrites carries the one rewrite at server level that is common,
// the redirect of every request to https, as a return; the others are
// noted (a location cannot see them).
func (c *ngxConv) serverRewrites(s *scope) {
	for _, d := range s.rewrites {
		re, repl, flag := arg(d, 0), arg(d, 1), arg(d, 2)
		whole := re == "^" || re == "^(.*)$" || re == "^/(.*)$" || re == "^/(.*)"
		if whole && (flag == "permanent" || flag == "redirect") && len(s.rewrites) == 1 && s.ret == nil {
			status := "301"
			if flag == "redirect" {
				status = "302"
			}
			ret := &nginx.Directive{Name: "return", Args: []string{status, strings.TrimSuffix(repl, "?")}, File: d.File, Line: d.Line}
			if httpsRedirect(ret) {
				s.ret = ret
				continue
			}
		}
		c.unsupported(d, "a rewrite at server level is not carried over; write it in a location")
	}
	s.rewrites = nil
}
