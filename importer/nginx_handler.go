package importer

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"gale/importer/nginx"
)

// handler fills route r from scope s; prefix is the route's path
// prefix, and regex tells a regex location's route (whose redirects keep
// the whole path).
func (c *ngxConv) handler(r *obj, s *scope, prefix string, regex bool) {
	c.accessRules(r, s)
	c.limit(r, s)
	c.auth(r, s)
	c.responseHeaders(r, s)
	switch {
	case s.ret != nil && regex:
		c.ret(r, s.ret, "")
	case s.ret != nil:
		c.ret(r, s.ret, prefix)
	case s.proxyPass != nil:
		c.proxy(r, s, prefix)
	case s.fastcgi != nil:
		c.fastcgi(r, s)
	default:
		c.static(r, s, prefix)
	}
}

// ret carries "return CODE [TEXT|URL]".
func (c *ngxConv) ret(r *obj, d *nginx.Directive, prefix string) {
	code, err := strconv.Atoi(arg(d, 0))
	if err != nil {
		if len(d.Args) == 1 && isURL(d.Args[0]) {
			code, d = 302, &nginx.Directive{Name: d.Name, Args: []string{"302", d.Args[0]}, File: d.File, Line: d.Line}
		} else {
			c.unsupported(d, "expected a status code")
			r.set("respond", newObj().set("status", 500))
			return
		}
	}
	switch code {
	case 301, 302, 303, 307, 308:
		to, keep, why := redirectTarget(arg(d, 1), prefix)
		if why != "" {
			c.note(d, "return", "%s; the route answers 500", why)
			r.set("respond", newObj().set("status", 500))
			return
		}
		red := newObj().set("to", to).set("status", code)
		if keep {
			red.set("keep_path", true)
		}
		r.set("redirect", red)
	default:
		if code == 444 {
			c.note(d, "return", "nginx closes the connection without a response; gale answers with status 444")
		}
		if code < 200 || code > 599 {
			c.note(d, "return", "status %d: gale answers with 200..599; the route answers 400", code)
			code = 400
		}
		resp := newObj().set("status", code)
		if len(d.Args) > 1 {
			body := d.Args[1]
			if strings.Contains(body, "$") {
				c.note(d, "return", "variables in the body are sent as written: %s", body)
			}
			resp.set("body", body)
			ct := s2(c.defaultType, "text/plain")
			resp.set("content_type", ct)
		}
		r.set("respond", resp)
	}
}

func s2(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "$scheme://")
}

// redirectTarget carries the common forms of a redirect URL: a fixed URL,
// a fixed scheme and host followed by $request_uri (the path and query),
// or $uri (the path).
func redirectTarget(u, prefix string) (to string, keep bool, why string) {
	switch {
	case strings.HasSuffix(u, "$request_uri"):
		base := strings.TrimSuffix(u, "$request_uri")
		if strings.Contains(base, "$") {
			return "", false, fmt.Sprintf("%s: gale cannot put a variable in a redirect's scheme or host", u)
		}
		if prefix == "" {
			return base + "{path}", false, ""
		}
		return base + prefix, true, ""
	case strings.Contains(u, "$"):
		t, ok := template(u)
		if !ok || strings.Contains(schemeHost(t), "{") {
			return "", false, fmt.Sprintf("%s: gale cannot carry these variables into a redirect", u)
		}
		return t, false, ""
	}
	return u, false, ""
}

func schemeHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			return u[:i+3+j]
		}
		return u
	}
	return ""
}

// template turns nginx variables into gale placeholders: $uri -> {path},
// $args/$query_string -> {query}, $1 -> {1}.
func template(s string) (string, bool) {
	ok := true
	out := tmplVar.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m[1:], "{}")
		switch {
		case name == "uri" || name == "document_uri":
			return "{path}"
		case name == "args" || name == "query_string":
			return "{query}"
		case name == "is_args":
			return "?"
		case name != "" && name[0] >= '0' && name[0] <= '9':
			return "{" + name + "}"
		}
		ok = false
		return m
	})
	return out, ok
}

var tmplVar = regexp.MustCompile(`\$(\{[A-Za-z0-9_]+\}|[A-Za-z0-9_]+)`)

// rewrites carries the simple forms of rewrite: a redirect (permanent,
// redirect, or a replacement that is a URL) or an internal rewrite of the
// path (break, last) when it is the only one.
func (c *ngxConv) rewrites(r *obj, s *scope) bool {
	if len(s.rewrites) == 0 {
		return false
	}
	if len(s.rewrites) > 1 {
		for _, d := range s.rewrites[1:] {
			c.unsupported(d, "gale carries one rewrite per location")
		}
	}
	d := s.rewrites[0]
	if len(d.Args) < 2 {
		c.unsupported(d, "expected a regex and a replacement")
		return false
	}
	re, why := galeRegex(d.Args[0], false)
	if why != "" {
		c.unsupported(d, why)
		return false
	}
	to, ok := template(d.Args[1])
	if !ok {
		c.unsupported(d, "the replacement holds variables gale cannot carry")
		return false
	}
	flag := arg(d, 2)
	if r.sub("match").get("path_regex") != nil {
		c.unsupported(d, "a rewrite in a regex location is not carried over")
		return false
	}
	r.sub("match").set("path_regex", re)
	if flag == "permanent" || flag == "redirect" || isURL(d.Args[1]) {
		status := 302
		if flag == "permanent" {
			status = 301
		}
		to = strings.TrimSuffix(to, "?")
		s.ret = &nginx.Directive{Name: "return", Args: []string{strconv.Itoa(status), to}, File: d.File, Line: d.Line}
		return true
	}
	if flag == "last" || flag == "" {
		c.note(d, "rewrite", "gale does not choose a route again after rewriting (nginx's last); the rewritten path stays on this route")
	}
	to = strings.TrimSuffix(to, "?")
	if !strings.HasPrefix(to, "/") {
		// gale normalises a rewritten path, so "/{1}" with a capture
		// that starts with "/" is the capture.
		to = "/" + to
	}
	r.set("rewrite", to)
	return true
}

// accessRules carries allow/deny; nginx lets through a client no rule
// names, gale denies it, so an "allow: all" closes the list.
func (c *ngxConv) accessRules(r *obj, s *scope) {
	if len(s.access) == 0 {
		return
	}
	var rules []*obj
	for _, d := range s.access {
		v := arg(d, 0)
		if v != "all" {
			if _, _, err := net.ParseCIDR(v); err != nil && net.ParseIP(v) == nil {
				c.unsupported(d, "expected an address, a CIDR or all")
				continue
			}
		}
		rules = append(rules, newObj().set(d.Name, v))
	}
	if last := s.access[len(s.access)-1]; arg(last, 0) != "all" {
		rules = append(rules, newObj().set("allow", "all"))
	}
	r.set("access", rules)
}

// limit carries limit_req with its zone's rate.
func (c *ngxConv) limit(r *obj, s *scope) {
	d := s.limitReq
	if d == nil {
		return
	}
	var zone string
	burst := 0
	nodelay := false
	for _, a := range d.Args {
		switch {
		case strings.HasPrefix(a, "zone="):
			zone = a[5:]
		case strings.HasPrefix(a, "burst="):
			burst, _ = strconv.Atoi(a[6:])
		case a == "nodelay":
			nodelay = true
		}
	}
	z := c.zones[zone]
	if z == nil {
		c.unsupported(d, "no limit_req_zone "+zone)
		return
	}
	rl := newObj()
	for _, a := range z.Args {
		if v, ok := strings.CutPrefix(a, "rate="); ok {
			rate := strings.Replace(strings.Replace(v, "r/s", "/s", 1), "r/m", "/m", 1)
			rl.set("rate", rate)
		}
	}
	if rl.get("rate") == nil {
		c.unsupported(z, "no rate=")
		return
	}
	if burst > 0 {
		rl.set("burst", burst)
	}
	switch key := arg(z, 0); {
	case key == "$binary_remote_addr" || key == "$remote_addr":
	case strings.HasPrefix(key, "$http_"):
		rl.set("header", headerName(key[6:]))
	default:
		c.note(z, "limit_req_zone", "key %s: gale keys limits by client address or a header", key)
	}
	why := "gale answers 429 at once when over the limit (nginx answers 503 by default)"
	if !nodelay {
		why += " and never delays a request (nginx's burst without nodelay queues)"
	}
	c.note(d, "limit_req", "%s", why)
	r.set("rate_limit", rl)
}

// headerName turns nginx's $http_x_api_key into X-Api-Key.
func headerName(s string) string {
	parts := strings.Split(s, "_")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// auth carries auth_basic with its htpasswd file.
func (c *ngxConv) auth(r *obj, s *scope) {
	if s.authBasic == "" || s.authBasic == "off" {
		return
	}
	ba := newObj().set("realm", s.authBasic)
	if s.authFile == "" {
		c.note(s.at, "auth_basic", "no auth_basic_user_file: every request is refused")
		ba.set("users", newObj())
	} else {
		ba.set("htpasswd", s.authFile)
		c.note(s.at, "auth_basic_user_file", "gale reads bcrypt lines only (htpasswd -B); convert crypt, MD5 or SHA entries")
	}
	r.set("basic_auth", ba)
}

// responseHeaders carries add_header with a plain value.
func (c *ngxConv) responseHeaders(r *obj, s *scope) {
	for _, d := range s.addHeaders {
		if len(d.Args) < 2 {
			continue
		}
		if strings.Contains(d.Args[1], "$") {
			c.unsupported(d, "a value with variables cannot be carried over")
			continue
		}
		r.sub("headers").sub("response").sub("set").set(d.Args[0], d.Args[1])
	}
}

// expires turns "expires 30d" into Cache-Control.
func expires(d *nginx.Directive) (string, bool) {
	v := arg(d, 0)
	switch v {
	case "off", "":
		return "", true
	case "epoch":
		return "no-cache", true
	case "max":
		return "max-age=315360000", true
	}
	secs, ok := nginxTime(v)
	if !ok || secs < 0 {
		return "", false
	}
	return "max-age=" + strconv.Itoa(secs), true
}

// nginxTime parses nginx's time syntax: 30d, 1h30m, 10s, 600.
func nginxTime(v string) (int, bool) {
	units := map[byte]int{'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 604800, 'M': 2592000, 'y': 31536000}
	total, n, digits := 0, 0, false
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case ch >= '0' && ch <= '9':
			n = n*10 + int(ch-'0')
			digits = true
			if n > 1<<30 {
				return 0, false
			}
		case units[ch] > 0 && digits:
			total += n * units[ch]
			n, digits = 0, false
		default:
			return 0, false
		}
	}
	return total + n, true
}
