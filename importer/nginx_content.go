package importer

import (
	"path/filepath"
	"strconv"
	"strings"

	"gale/importer/nginx"
)

// static carries root/alias, index, try_files, autoindex, expires,
// gzip_static and error_page. gale's static root is the directory the
// rest of the path after the route's prefix is looked up in: nginx's
// alias; nginx's root plus the prefix. try_files candidates are whole
// paths under root, so a route with try_files keeps nginx's root.
func (c *ngxConv) static(r *obj, s *scope, prefix string) {
	root := s.root
	if s.alias != "" {
		root = s.alias
		if s.tryFiles != nil {
			c.note(s.tryFiles, "try_files", "with alias: the candidates are looked up under the alias")
		}
	} else if root == "" {
		c.note(s.at, "root", "no root: nginx serves its prefix's html directory; the route answers 404")
		r.set("respond", newObj().set("status", 404))
		return
	}
	// nginx looks up root + the whole path; gale's static root takes the
	// path after the route's prefix, and must exist. Under a prefix other
	// than "/", try_files keeps nginx's lookup (candidates are whole paths
	// under root) without naming a directory that may not exist.
	implicit := s.tryFiles == nil && s.alias == "" && prefix != "/" && prefix != ""
	if tf := s.tryFiles; tf != nil && c.phpFront(r, s, tf) {
		return
	}
	st := newObj().set("root", root)
	if idx := c.index(s); len(idx) != 1 || idx[0] != "index.html" {
		st.set("index", idx)
	}
	if s.autoindex {
		st.set("browse", true)
	}
	if s.tryFiles != nil {
		if list := c.tryFiles(s.tryFiles); len(list) >= 2 {
			st.set("try_files", list)
		}
	} else if implicit {
		st.set("try_files", []string{"{path}", "{path}/", "=404"})
	}
	if s.expires != nil {
		if cc, ok := expires(s.expires); ok && cc != "" {
			st.set("cache_control", cc)
			c.note(s.expires, "expires", "carried as Cache-Control: %s (gale sends no Expires field)", cc)
		} else if !ok {
			c.unsupported(s.expires, "expected a time such as 30d, max, epoch or off")
		}
	}
	c.errorPages(st, s)
	switch {
	case s.gzipStatic:
		st.set("compress", newObj().set("encodings", []string{"gzip"}))
	case !c.gzip:
		st.set("compress", newObj().set("encodings", []string{}))
	}
	r.set("static", st)
}

// tryFiles translates the candidates: $uri -> {path}, $uri/ -> {path}/,
// literals as they are, =CODE last. Query parts and named locations are
// dropped with a note.
func (c *ngxConv) tryFiles(d *nginx.Directive) []string {
	var out []string
	for i, a := range d.Args {
		last := i == len(d.Args)-1
		if strings.HasPrefix(a, "@") {
			c.note(d, "try_files", "named location %s: gale has no internal redirects; =404 takes its place", a)
			out = append(out, "=404")
			continue
		}
		if strings.HasPrefix(a, "=") {
			if last {
				out = append(out, a)
			}
			continue
		}
		if q := strings.IndexByte(a, '?'); q >= 0 {
			a = a[:q]
		}
		t, ok := template(a)
		if !ok {
			c.note(d, "try_files", "candidate %s holds variables gale cannot carry; it is left out", a)
			continue
		}
		out = append(out, t)
	}
	return out
}

// phpFront carries the front-controller pattern (try_files ending in
// /index.php, with a fastcgi_pass location for .php in the server) as a
// php route: scripts run, other files are static.
func (c *ngxConv) phpFront(r *obj, s *scope, tf *nginx.Directive) bool {
	last := tf.Args[len(tf.Args)-1]
	if !strings.HasPrefix(last, "/index.php") {
		return false
	}
	to := c.fcgiPass
	if to == "" {
		return false
	}
	c.note(tf, "try_files", "carried as a php route: .php scripts and the front controller /index.php run through PHP-FPM, other files are static")
	r.set("php", newObj().set("to", to).set("root", s.root))
	return true
}

// errorPages carries "error_page CODE... /file" for static routes.
func (c *ngxConv) errorPages(st *obj, s *scope) {
	for _, d := range s.errorPages {
		if len(d.Args) < 2 {
			continue
		}
		uri := d.Args[len(d.Args)-1]
		if !strings.HasPrefix(uri, "/") || strings.HasPrefix(d.Args[len(d.Args)-2], "=") || s.root == "" {
			c.unsupported(d, "gale's error pages are files served with the error's status")
			continue
		}
		pages := st.sub("error_pages")
		for _, code := range d.Args[:len(d.Args)-1] {
			if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
				pages.set(code, filepath.Join(s.root, uri))
			}
		}
	}
}

// proxy carries proxy_pass and its settings.
func (c *ngxConv) proxy(r *obj, s *scope, prefix string) {
	d := s.proxyPass
	u := arg(d, 0)
	p := newObj()
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		c.unsupported(d, "gale's proxy speaks plain HTTP to its upstreams (http:// or h2c)")
		r.set("respond", newObj().set("status", 502))
		return
	}
	if strings.Contains(rest, "$") {
		c.unsupported(d, "an upstream named by variables cannot be carried over")
		r.set("respond", newObj().set("status", 502))
		return
	}
	p.set("to", nil)
	hostport, uri := rest, ""
	if strings.HasPrefix(rest, "unix:") {
		if i := strings.Index(rest[5:], ":"); i >= 0 {
			hostport, uri = rest[:5+i], rest[5+i+1:]
		}
	} else if i := strings.IndexByte(rest, '/'); i >= 0 {
		hostport, uri = rest[:i], rest[i:]
	}
	if up := c.upstreams[hostport]; up != nil {
		c.upstream(p, up)
	} else {
		if !strings.Contains(hostport, ":") {
			hostport += ":80"
		}
		p.set("to", []string{hostport})
	}
	if uri != "" {
		if prefix == "" {
			c.note(d, "proxy_pass", "a URI in proxy_pass of a regex location: nginx refuses it; left out")
		} else {
			p.set("rewrite", uri)
		}
	}
	c.proxyHeaders(r, p, s)
	if v := s.proxyVer; v != nil && arg(v, 0) == "1.0" {
		c.unsupported(v, "gale speaks HTTP/1.1 to upstreams")
	}
	for _, t := range [][2]string{{"proxy_connect_timeout", "connect"}, {"proxy_read_timeout", "response_header"}} {
		if secs, ok := nginxTime(s.proxyTimes[t[0]]); ok && secs > 0 {
			p.sub("timeouts").set(t[1], strconv.Itoa(secs)+"s")
		}
	}
	r.set("proxy", p)
}

// upstream carries an upstream block: servers, balancing and keepalive.
func (c *ngxConv) upstream(p *obj, up *nginx.Directive) {
	var to []string
	weights := map[string]bool{}
	for _, d := range up.Block {
		switch d.Name {
		case "server":
			a := arg(d, 0)
			if !strings.HasPrefix(a, "unix:") && !strings.Contains(a, ":") {
				a += ":80"
			}
			w := "1"
			skip := false
			for _, o := range d.Args[1:] {
				switch {
				case strings.HasPrefix(o, "weight="):
					w = o[7:]
				case o == "backup" || o == "down":
					c.note(d, "server", "%s: gale has no %s servers; left out", a, o)
					skip = true
				case strings.HasPrefix(o, "max_fails="), strings.HasPrefix(o, "fail_timeout="):
					c.note(d, "server", "%s: see proxy.health_check.passive (fails, window) for gale's equivalent", o)
				default:
					c.note(d, "server", "option %s is not carried over", o)
				}
			}
			if !skip && !contains(to, a) {
				to = append(to, a)
				weights[w] = true
			}
		case "keepalive":
			if n, err := strconv.Atoi(arg(d, 0)); err == nil {
				p.set("max_idle_per_upstream", n)
			}
		case "least_conn":
			p.set("load_balancing", "least-connections")
		case "ip_hash":
			p.set("load_balancing", "client-ip-hash")
		case "random":
			p.set("load_balancing", "random-two")
		case "hash":
			if arg(d, 0) == "$remote_addr" || arg(d, 0) == "$binary_remote_addr" {
				p.set("load_balancing", "client-ip-hash")
			} else {
				c.unsupported(d, "gale hashes on the client address only")
			}
		default:
			c.unsupported(d, "not carried over")
		}
	}
	if len(weights) > 1 {
		c.note(up, "upstream", "server weights differ: gale spreads requests evenly over its upstreams")
	}
	p.set("to", to)
}

// proxyHeaders carries proxy_set_header: Host $host is preserve_host,
// the forwarded fields and the WebSocket upgrade fields are what gale's
// proxy sends by itself, fixed values are request header rules.
func (c *ngxConv) proxyHeaders(r, p *obj, s *scope) {
	for _, d := range s.proxyHdrs {
		name, val := strings.ToLower(arg(d, 0)), arg(d, 1)
		switch {
		case name == "host" && (val == "$host" || val == "$http_host"):
			p.set("preserve_host", true)
		case name == "host" && val == "$proxy_host":
		case name == "x-real-ip" && val == "$remote_addr",
			name == "x-forwarded-for" && (val == "$proxy_add_x_forwarded_for" || val == "$remote_addr"),
			name == "x-forwarded-proto" && val == "$scheme",
			name == "x-forwarded-host" && val == "$host",
			name == "upgrade" && val == "$http_upgrade",
			name == "connection" && (strings.EqualFold(val, "upgrade") || val == "$connection_upgrade" || val == ""):
			// gale's proxy sends these itself.
		case !strings.Contains(val, "$"):
			if val == "" {
				r.sub("headers").sub("request").set("remove", append(strs(r.sub("headers").sub("request").get("remove")), arg(d, 0)))
			} else {
				r.sub("headers").sub("request").sub("set").set(arg(d, 0), val)
			}
		default:
			c.unsupported(d, "a value with variables cannot be carried over")
		}
	}
}

func strs(v any) []string {
	s, _ := v.([]string)
	return s
}

// fastcgi carries fastcgi_pass with its root, index and plain params.
func (c *ngxConv) fastcgi(r *obj, s *scope) {
	to := c.fcgiAddr(s.fastcgi)
	if s.root == "" {
		c.note(s.fastcgi, "fastcgi_pass", "no root: gale's FastCGI routes need the document root")
		r.set("respond", newObj().set("status", 502))
		return
	}
	f := newObj().set("to", to).set("root", s.root)
	if s.fcgiIndex != "" && s.fcgiIndex != "index.php" {
		f.set("index", s.fcgiIndex)
	}
	for _, d := range s.fcgiParams {
		name, val := arg(d, 0), arg(d, 1)
		switch {
		case cgiStandard[name] && strings.HasPrefix(val, "$"):
			// gale sends the standard CGI/1.1 variables itself.
		case !strings.Contains(val, "$"):
			f.sub("env").set(name, val)
		default:
			c.unsupported(d, "a value with variables cannot be carried over (gale sends the standard CGI variables)")
		}
	}
	r.set("fastcgi", f)
}

func (c *ngxConv) fcgiAddr(d *nginx.Directive) string {
	a := arg(d, 0)
	if up := c.upstreams[a]; up != nil {
		for _, x := range up.Block {
			if x.Name == "server" {
				return arg(x, 0)
			}
		}
	}
	return a
}

// cgiStandard are the variables of Debian's fastcgi_params and
// fastcgi.conf, which gale's FastCGI routes send by themselves.
var cgiStandard = map[string]bool{
	"SCRIPT_FILENAME": true, "QUERY_STRING": true, "REQUEST_METHOD": true, "CONTENT_TYPE": true, "CONTENT_LENGTH": true,
	"SCRIPT_NAME": true, "REQUEST_URI": true, "DOCUMENT_URI": true, "DOCUMENT_ROOT": true, "SERVER_PROTOCOL": true,
	"REQUEST_SCHEME": true, "HTTPS": true, "GATEWAY_INTERFACE": true, "SERVER_SOFTWARE": true, "REMOTE_ADDR": true,
	"REMOTE_PORT": true, "REMOTE_USER": true, "SERVER_ADDR": true, "SERVER_PORT": true, "SERVER_NAME": true,
	"REDIRECT_STATUS": true, "PATH_INFO": true, "PATH_TRANSLATED": true,
}

// index is the scope's index list without the names gale cannot take
// (variables, paths).
func (c *ngxConv) index(s *scope) []string {
	var out []string
	for _, n := range s.index {
		if strings.ContainsAny(n, "$/") {
			c.note(s.indexAt, "index", "%s: gale's index files are plain file names; left out", n)
			continue
		}
		out = append(out, n)
	}
	return out
}
