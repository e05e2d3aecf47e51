package config

import (
	"cmp"
	"fmt"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// notSupportedYet lists the keys whose feature has not landed yet, by key
// path pattern (list indexes written "[]"), with the feature's name for the
// message "not supported yet: FEATURE". Such a key is rejected rather than
// accepted and ignored, and is not checked further. Deleting a line enables
// the key: its decoder below is already in place. The pattern "listen[]{}"
// stands for the object form of a listener.
var notSupportedYet = map[string]string{}

// Size and count bounds. Every size is finite; the caps only catch values
// that cannot be meant (a typo of a few extra digits).
const (
	maxBuffer    = 1 << 30 // read/write buffers, socket buffers, output bound
	maxEventLoop = 1024
)

// HTTP/2 bounds. The windows and the frame size are the protocol's own
// limits (RFC 9113 sections 6.5.2 and 6.9.1); the others keep what one
// connection may hold finite.
const (
	maxH2Streams    = 1000
	minH2Window     = 65535 // the protocol's initial window
	maxH2Window     = 1<<31 - 1
	minH2FrameSize  = 1 << 14 // SETTINGS_MAX_FRAME_SIZE may not be set lower
	maxH2FrameSize  = 1<<24 - 1
	minH2HeaderList = 1 << 10
	maxH2HeaderList = 1 << 20
	maxH2Requests   = 1_000_000_000
)

// Default values, as documented on the fields in types.go.
const (
	defaultReadBuffer        = 64 << 10
	defaultWriteBuffer       = 64 << 10
	defaultMaxBufferedOutput = 256 << 10
	defaultCacheMaxBytes     = 256 << 20
	defaultCacheMaxFileBytes = 1 << 20
	defaultAccessLogMaxBytes = 100 << 20
	defaultAccessLogKeep     = 5
	defaultCompressMinBytes  = 1 << 10
	defaultRespondType       = "text/plain; charset=utf-8"
	defaultRedirectStatus    = 308
	defaultH2Streams         = 128
	defaultH2StreamWindow    = 256 << 10
	defaultH2ConnWindow      = 1 << 20
	defaultH2FrameSize       = 16 << 10
	defaultH2Requests        = 10000
)

// defaults returns a Config holding every default, without listeners and
// routes.
func defaults() *Config {
	return &Config{
		Metrics: Metrics{Path: "/metrics"},
		Server: Server{
			EventLoops:        runtime.NumCPU(),
			ReusePort:         true,
			LoadBalancing:     "round-robin",
			EncodedSlashes:    "keep",
			ReadBuffer:        defaultReadBuffer,
			WriteBuffer:       defaultWriteBuffer,
			MaxBufferedOutput: defaultMaxBufferedOutput,
			TCPNoDelay:        true,
			ServerHeader:      "gale",
			Limits: Limits{
				RequestLine: DefaultRequestLine,
				HeaderBytes: DefaultHeaderBytes,
				BodyBytes:   DefaultBodyBytes,
			},
			Timeouts: Timeouts{
				ReadHeader: 10 * time.Second,
				ReadBody:   30 * time.Second,
				Idle:       60 * time.Second,
				Write:      60 * time.Second,
				Shutdown:   30 * time.Second,
			},
			HTTP2: HTTP2{
				Enabled:              true,
				MaxConcurrentStreams: defaultH2Streams,
				InitialStreamWindow:  defaultH2StreamWindow,
				InitialConnWindow:    defaultH2ConnWindow,
				MaxFrameSize:         defaultH2FrameSize,
				MaxHeaderListSize:    h2HeaderList(DefaultHeaderBytes),
				MaxRequests:          defaultH2Requests,
			},
			HTTP3: defaultHTTP3(),
		},
		Cache: Cache{
			MaxBytes:     defaultCacheMaxBytes,
			MaxFileBytes: defaultCacheMaxFileBytes,
			Revalidate:   time.Second,
			NegativeTTL:  time.Second,
		},
		MimeTypes: map[string]string{},
		Log:       Log{Level: "info", Format: "text"},
		AccessLog: AccessLog{Format: "combined", MaxBytes: defaultAccessLogMaxBytes, Keep: defaultAccessLogKeep},
	}
}

// defaultStatic returns a Static with every default but Root.
func defaultStatic() *Static {
	return &Static{
		Index:          []string{"index.html"},
		Hidden:         "deny",
		FollowSymlinks: "inside_root",
		Compress:       Compress{Encodings: []string{"zstd", "br", "gzip"}, MinBytes: defaultCompressMinBytes},
	}
}

// config decodes the document's top-level mapping into c.
func (d *decoder) config(root *yaml.Node, c *Config) {
	s := d.section(root, "", topKeys.names()...)
	if s == nil {
		return
	}
	// cluster first: whether there is a shared store decides where
	// automatic certificates are kept by default.
	if v := s.get("cluster"); v != nil {
		d.cluster(v, "cluster", &c.Cluster)
	}
	d.shared = c.Cluster.Redis != nil
	if v := d.required(s, "", "listen", `listen: ["127.0.0.1:8080"]`); v != nil {
		c.Listen = d.listen(v, "listen")
		d.checkAutomatic(c.Listen)
	}
	if v := s.get("server"); v != nil {
		d.server(v, "server", &c.Server)
	}
	d.checkProtocolsHTTP2(c.Server.HTTP2)
	if v := s.get("cache"); v != nil {
		d.cache(v, "cache", &c.Cache)
	}
	if v := s.get("mime_types"); v != nil {
		d.mimeTypes(v, "mime_types", c.MimeTypes)
	}
	if v := s.get("log"); v != nil {
		d.log(v, "log", &c.Log)
	}
	if v := s.get("access_log"); v != nil {
		d.accessLog(v, "access_log", &c.AccessLog)
	}
	if v := s.get("metrics"); v != nil {
		d.metrics(v, "metrics", &c.Metrics)
		d.checkMetricsAddress(c)
	}
	if v := s.get("admin"); v != nil {
		d.admin(v, "admin", &c.Admin)
		d.checkAdminAddress(c)
	}
	if v := s.get("pid_file"); v != nil {
		d.pidFile(v, "pid_file", c)
	}
	if v := d.required(s, "", "routes", "routes: [{path: /, static: {root: ./site}}]"); v != nil {
		c.Routes = d.routes(v, "routes")
	}
	if c.Cluster.Redis == nil {
		for _, r := range d.clusterScopes {
			d.errorf(r.node, r.path, "scope cluster needs a shared store: add cluster: {redis: {address: HOST:PORT}} at the top of the file, or use scope: local")
		}
	}
}

// listen decodes one address or a list of addresses, each a string or an
// object {address, tls, redirect_to_https, protocols} (tls.go).
func (d *decoder) listen(n *yaml.Node, path string) []Listener {
	n = deref(n)
	one := func(item *yaml.Node, path string) (Listener, bool) {
		if item.Kind == yaml.MappingNode {
			if feature, gated := d.gate["listen[]{}"]; gated {
				d.errorf(item, path, "not supported yet: %s", feature)
				return Listener{}, false
			}
			return d.listenerObject(item, path)
		}
		addr, ok := d.str(item, path)
		if !ok {
			return Listener{}, false
		}
		if msg := checkAddress(addr); msg != "" {
			d.errorf(item, path, "%s", msg)
			return Listener{}, false
		}
		return Listener{Address: addr, Protocols: DefaultProtocols(false), Pos: Pos{item.Line, item.Column}}, true
	}
	if isNull(n) {
		d.errorf(n, path, `expected an address or a list of addresses, e.g. ["127.0.0.1:8080"]`)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		if l, ok := one(n, path); ok {
			return []Listener{l}
		}
		return nil
	}
	items, _ := d.list(n, path, "addresses")
	if len(items) == 0 && len(n.Content) == 0 {
		d.errorf(n, path, `expected at least one address, e.g. ["127.0.0.1:8080"]`)
		return nil
	}
	var out []Listener
	for i, item := range items {
		l, ok := one(item, index(path, i))
		if !ok {
			continue
		}
		// Port 0 picks a free port per listener, so "127.0.0.1:0" twice
		// is two listeners, not a repeat.
		if j := slices.IndexFunc(out, func(o Listener) bool { return o.Address == l.Address && !strings.HasSuffix(l.Address, ":0") }); j >= 0 {
			d.errorf(item, index(path, i), "address %s is listed twice; first at line %d, column %d", quote(l.Address), out[j].Pos.Line, out[j].Pos.Col)
			continue
		}
		out = append(out, l)
	}
	linkHTTPSRedirects(out)
	return out
}

func (d *decoder) server(n *yaml.Node, path string, sv *Server) {
	s := d.section(n, path, serverKeys.names()...)
	if s == nil {
		return
	}
	if v := s.get("event_loops"); v != nil {
		if n, ok := d.integer(v, join(path, "event_loops"), 0, maxEventLoop); ok && n > 0 {
			sv.EventLoops = int(n)
		}
	}
	d.setBool(s, "reuse_port", &sv.ReusePort)
	if v := s.get("load_balancing"); v != nil {
		if e, ok := d.enum(v, join(path, "load_balancing"), serverKeys.options("load_balancing")...); ok {
			sv.LoadBalancing = e
		}
	}
	d.setBool(s, "lock_os_thread", &sv.LockOSThread)
	d.setBool(s, "edge_triggered", &sv.EdgeTriggered)
	if d.setInt(s, "read_buffer", &sv.ReadBuffer, 1, maxBuffer) {
		sv.ReadBuffer = ceilPow2(sv.ReadBuffer)
	}
	if d.setInt(s, "write_buffer", &sv.WriteBuffer, 1, maxBuffer) {
		sv.WriteBuffer = ceilPow2(sv.WriteBuffer)
	}
	d.setInt(s, "max_buffered_output", &sv.MaxBufferedOutput, 1, maxBuffer)
	d.setInt(s, "socket_recv_buffer", &sv.SocketRecvBuffer, 0, maxBuffer)
	d.setInt(s, "socket_send_buffer", &sv.SocketSendBuffer, 0, maxBuffer)
	d.setBool(s, "tcp_no_delay", &sv.TCPNoDelay)
	if v, p, h, ok := d.strKey(s, path, "server_header"); ok {
		if msg := checkHeaderValue(h); msg != "" {
			d.errorf(v, p, "%s", msg)
		} else {
			sv.ServerHeader = h
		}
	}
	d.setEnum(s, "encoded_slashes", &sv.EncodedSlashes, encodedSlashOptions...)
	if v := s.get("trusted_proxies"); v != nil {
		sv.TrustedProxies = d.prefixes(v, join(path, "trusted_proxies"))
	}
	if v := s.get("limits"); v != nil {
		p := join(path, "limits")
		if l := d.section(v, p, limitsKeys.names()...); l != nil {
			d.setInt(l, "request_line", &sv.Limits.RequestLine, 1, maxBuffer)
			d.setInt(l, "header_bytes", &sv.Limits.HeaderBytes, 1, maxBuffer)
			d.setInt64(l, "body_bytes", &sv.Limits.BodyBytes, 1)
			if v := l.get("connections"); v != nil {
				if n, ok := d.integer(v, join(p, "connections"), 0, 1<<31-1); ok {
					sv.Limits.Connections = int(n)
				}
			}
		}
	}
	if v := s.get("timeouts"); v != nil {
		p := join(path, "timeouts")
		if t := d.section(v, p, timeoutsKeys.names()...); t != nil {
			d.setDuration(t, "read_header", &sv.Timeouts.ReadHeader)
			d.setDuration(t, "read_body", &sv.Timeouts.ReadBody)
			d.setDuration(t, "idle", &sv.Timeouts.Idle)
			d.setDuration(t, "write", &sv.Timeouts.Write)
			d.setDuration(t, "shutdown", &sv.Timeouts.Shutdown)
			d.setDuration(t, "drain", &sv.Timeouts.Drain)
		}
	}
	listSet := false
	if v := s.get("http2"); v != nil {
		listSet = d.http2(v, join(path, "http2"), &sv.HTTP2)
	}
	if !listSet {
		sv.HTTP2.MaxHeaderListSize = h2HeaderList(sv.Limits.HeaderBytes)
	}
	if v := s.get("http3"); v != nil {
		d.http3(v, join(path, "http3"), &sv.HTTP3)
	}
}

// http2 decodes server.http2 into h. It reports whether the file sets
// max_header_list_size; when it does not, the caller derives it from
// limits.header_bytes, which may be written after this section.
func (d *decoder) http2(n *yaml.Node, path string, h *HTTP2) (listSet bool) {
	s := d.section(n, path, http2Keys.names()...)
	if s == nil {
		return false
	}
	d.setBool(s, "enabled", &h.Enabled)
	d.setCount32(s, "max_concurrent_streams", &h.MaxConcurrentStreams, 1, maxH2Streams)
	d.setSize32(s, "initial_stream_window", &h.InitialStreamWindow, minH2Window, maxH2Window)
	d.setSize32(s, "initial_connection_window", &h.InitialConnWindow, minH2Window, maxH2Window)
	d.setSize32(s, "max_frame_size", &h.MaxFrameSize, minH2FrameSize, maxH2FrameSize)
	d.setSize32(s, "max_header_list_size", &h.MaxHeaderListSize, minH2HeaderList, maxH2HeaderList)
	d.setCount32(s, "max_requests", &h.MaxRequests, 1, maxH2Requests)
	return s.has("max_header_list_size")
}

// h2HeaderList is the default SETTINGS_MAX_HEADER_LIST_SIZE: the HTTP/1.1
// head limit, brought within the range the key itself allows.
func h2HeaderList(headerBytes int) uint32 {
	return uint32(min(max(headerBytes, minH2HeaderList), maxH2HeaderList))
}

// ceilPow2 rounds n (>= 1) up to a power of two, as gnet does with its
// buffer sizes, so that the config shows the size actually used.
func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func (d *decoder) cache(n *yaml.Node, path string, c *Cache) {
	s := d.section(n, path, cacheKeys.names()...)
	if s == nil {
		return
	}
	d.setInt64(s, "max_bytes", &c.MaxBytes, 1)
	if d.setInt64(s, "max_file_bytes", &c.MaxFileBytes, 1) && c.MaxFileBytes > c.MaxBytes {
		d.errorf(s.get("max_file_bytes"), join(path, "max_file_bytes"), "must not exceed cache.max_bytes (%s)", formatSize(c.MaxBytes))
	}
	d.setDuration(s, "revalidate", &c.Revalidate)
	d.setDuration(s, "negative_ttl", &c.NegativeTTL)
}

// mimeTypes decodes extension -> media type pairs into m.
func (d *decoder) mimeTypes(n *yaml.Node, path string, m map[string]string) {
	first := map[string]*yaml.Node{}
	d.eachKey(n, path, func(e entry, p, ext string) {
		if len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "/\\") || checkHeaderName(ext[1:]) != "" {
			d.errorf(e.key, p, `expected a file extension with a leading dot, such as ".webmanifest", got %s`, quote(ext))
			return
		}
		if i := strings.LastIndexByte(ext, '.'); i > 0 {
			d.errorf(e.key, p, "expected one extension, got %s: only the last one (%s) decides a file's type", quote(ext), quote(ext[i:]))
			return
		}
		typ, ok := d.str(e.val, p)
		if !ok {
			return
		}
		if msg := checkMediaType(typ); msg != "" {
			d.errorf(deref(e.val), p, "%s", msg)
			return
		}
		ext = strings.ToLower(ext)
		if k, dup := first[ext]; dup {
			d.errorf(e.key, p, "extension %s is listed twice (case does not matter); first at line %d, column %d", quote(ext), k.Line, k.Column)
			return
		}
		first[ext] = e.key
		m[ext] = typ
	})
}

func (d *decoder) log(n *yaml.Node, path string, l *Log) {
	s := d.section(n, path, logKeys.names()...)
	if s == nil {
		return
	}
	d.setEnum(s, "level", &l.Level, logKeys.options("level")...)
	d.setEnum(s, "format", &l.Format, logKeys.options("format")...)
}

// metrics decodes the metrics listener. Its address must be one of its
// own: sharing a listen address would make gnet and the metrics server
// fight over the port (checkMetricsAddress runs once listen is known).
func (d *decoder) metrics(n *yaml.Node, path string, m *Metrics) {
	s := d.section(n, path, metricsKeys.names()...)
	if s == nil {
		return
	}
	if v, p, a, ok := d.strKey(s, path, "listen"); ok && a != "" {
		if msg := checkAddress(a); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		} else {
			m.Listen, m.Pos = a, Pos{deref(v).Line, deref(v).Column}
		}
	}
	if v, p, mp, ok := d.strKey(s, path, "path"); ok {
		if !strings.HasPrefix(mp, "/") || strings.ContainsAny(mp, "?# \t") {
			d.errorf(deref(v), p, "expected a path such as /metrics, got %s", quote(mp))
		} else {
			m.Path = mp
		}
	}
	if v := s.get("stub_status"); v != nil {
		d.stubStatus(v, join(path, "stub_status"), m)
	}
}

// stubStatus decodes metrics.stub_status: a path other than the metrics'
// own.
func (d *decoder) stubStatus(v *yaml.Node, p string, m *Metrics) {
	sp, ok := d.str(v, p)
	switch {
	case !ok || sp == "":
	case !strings.HasPrefix(sp, "/") || strings.ContainsAny(sp, "?# \t"):
		d.errorf(deref(v), p, "expected a path such as /nginx_status, got %s", quote(sp))
	case sp == m.Path:
		d.errorf(deref(v), p, "%s is metrics.path already: give the stub_status page a path of its own, e.g. /nginx_status", quote(sp))
	default:
		m.Stub = sp
	}
}

// checkMetricsAddress refuses a metrics listener on one of the server's
// listen addresses (port 0, which the kernel chooses, never clashes).
func (d *decoder) checkMetricsAddress(c *Config) {
	if c.Metrics.Listen == "" || strings.HasSuffix(c.Metrics.Listen, ":0") {
		return // off, or a port the kernel picks
	}
	for _, l := range c.Listen {
		if l.Address == c.Metrics.Listen {
			d.errorf(&yaml.Node{Line: c.Metrics.Pos.Line, Column: c.Metrics.Pos.Col}, "metrics.listen", "address %s is also listed under listen (line %d, column %d): give metrics an address of its own, e.g. 127.0.0.1:9180",
				quote(l.Address), l.Pos.Line, l.Pos.Col)
		}
	}
}

func (d *decoder) accessLog(n *yaml.Node, path string, a *AccessLog) {
	s := d.section(n, path, accessLogKeys.names()...)
	if s == nil {
		return
	}
	if v, p, f, ok := d.strKey(s, path, "path"); ok {
		switch f {
		case "", "-":
			a.Path = f
		default:
			a.Path = d.resolve(f)
			if msg := checkLogPath(a.Path, f); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
			}
		}
	}
	d.setEnum(s, "format", &a.Format, accessLogKeys.options("format")...)
	d.setInt64(s, "max_bytes", &a.MaxBytes, 1)
	if v := s.get("keep"); v != nil {
		if k, ok := d.integer(v, join(path, "keep"), 0, 1000); ok {
			a.Keep = int(k)
		}
	}
}

// checkLogPath checks that a log file can be created at p: its directory
// exists, and p is not a directory.
// abs is p made absolute, given is p as written.
func checkLogPath(abs, given string) string {
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return fmt.Sprintf("%s is a directory%s; expected a file path", quote(given), resolvedTo(abs, given))
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Sprintf("the directory of %s does not exist (%s)", quote(given), quote(dir))
	}
	if !fi.IsDir() {
		return fmt.Sprintf("the directory of %s is not a directory (%s)", quote(given), quote(dir))
	}
	return ""
}

// resolvedTo notes the absolute form of a relative path in messages.
func resolvedTo(abs, given string) string {
	if abs == given {
		return ""
	}
	return " (resolved to " + quote(abs) + ")"
}

// resolve makes a relative path absolute against the config's directory.
func (d *decoder) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// healthKinds are the options of a health route.
var healthKinds = []string{"live", "ready"}

// routes decodes the route list and checks that no two routes share host
// and path.
func (d *decoder) routes(n *yaml.Node, path string) []Route {
	items, ok := d.nonEmptyList(n, path, "routes", "expected at least one route, e.g. [{path: /, static: {root: ./site}}]")
	if !ok {
		return nil
	}
	var out []Route
	var nodes []*yaml.Node // the path node of each route in out
	var idx []int          // its index in the file
	names := make([]string, len(items))
	defer func() { d.uniqueRouteNames(items, path, names) }()
	for i, item := range items {
		p := index(path, i)
		r, pathNode, ok := d.route(item, p)
		names[i] = r.Name
		if ok && pathNode != nil && r.Path != "" {
			for j := range out {
				if RoutesConflict(&out[j], &r) {
					d.conflict(p, &r, pathNode, index(path, idx[j]), &out[j], nodes[j])
					ok = false
					break
				}
			}
		}
		if ok {
			out = append(out, r)
			nodes = append(nodes, pathNode)
			idx = append(idx, i)
		}
	}
	return out
}

// conflict reports route r (at p) that could match the same requests as
// an earlier route without the precedence ordering them.
func (d *decoder) conflict(p string, r *Route, pathNode *yaml.Node, firstPath string, first *Route, firstNode *yaml.Node) {
	host := "any host"
	if r.Host != "" {
		host = "host " + quote(r.Host)
	}
	if r.Match.Kinds() == 0 {
		d.errorf(pathNode, join(p, "path"), "duplicate route for %s and path %s: %s at line %d, column %d has the same host and path",
			host, quote(r.Path), firstPath, firstNode.Line, firstNode.Column)
		return
	}
	d.errorf(pathNode, join(p, "path"), "route for %s and path %s conflicts with %s at line %d, column %d: both could match one request and the precedence "+
		"(exact path, path_regex, number of matchers) does not order them; add a matcher with no value in common (methods, headers, query, remote) or make one route's matchers more specific",
		host, quote(r.Path), firstPath, firstNode.Line, firstNode.Column)
}

// route decodes one route. It returns the route, the node of its path (for
// duplicate reports; nil when the path is missing) and whether the route
// is valid. Host is "-" when the host was invalid, so that no duplicate is
// reported against it.
func (d *decoder) route(n *yaml.Node, path string) (Route, *yaml.Node, bool) {
	s := d.section(n, path, routeKeys.names()...)
	if s == nil {
		return Route{}, nil, false
	}
	r := Route{Pos: Pos{s.node.Line, s.node.Column}}
	before := len(d.errs)
	if v := s.get("name"); v != nil {
		r.Name = d.routeName(v, join(path, "name"))
	}
	if v := s.get("host"); v != nil {
		r.Host = d.routeHost(v, join(path, "host"))
	}
	pathNode := s.get("path")
	if pathNode != nil {
		r.Path = d.routePath(pathNode, join(path, "path"))
		pathNode = deref(pathNode)
	} else if s.missing("path") {
		d.errorf(s.node, join(path, "path"), `missing required key; e.g. path: /`)
	}
	if v := s.get("match"); v != nil {
		r.Match = d.match(v, join(path, "match"), r.Path)
	}
	if v := s.get("rewrite"); v != nil {
		r.Rewrite = d.rewrite(v, join(path, "rewrite"), &r.Match)
	}
	if v := s.get("access"); v != nil {
		r.Access = d.access(v, join(path, "access"))
	}
	if v := s.get("basic_auth"); v != nil {
		r.BasicAuth = d.basicAuth(v, join(path, "basic_auth"))
	}
	if v := s.get("forward_auth"); v != nil {
		r.ForwardAuth = d.forwardAuth(v, join(path, "forward_auth"))
	}
	if v := s.get("rate_limit"); v != nil {
		r.RateLimit = d.rateLimit(v, join(path, "rate_limit"))
	}
	if v := s.get("headers"); v != nil {
		r.Headers = d.headers(v, join(path, "headers"))
	}
	d.setEnum(s, "encoded_slashes", &r.EncodedSlashes, encodedSlashOptions...)
	d.routeHandler(s, path, &r)
	if v := s.get("cache"); v != nil {
		r.Cache = d.proxyCache(v, join(path, "cache"))
		if r.Cache != nil && r.Proxy == nil && r.FastCGI == nil {
			d.errorf(s.key("cache"), join(path, "cache"), "a cache stores what an upstream answers: only proxy, fastcgi and php routes have one")
		}
	}
	return r, pathNode, len(d.errs) == before
}

var routeNameRE = regexp.MustCompile(routeNamePattern)

// routeName decodes a route's name and returns it, or "" when it is
// invalid.
func (d *decoder) routeName(v *yaml.Node, p string) string {
	name, ok := d.str(v, p)
	if !ok {
		return ""
	}
	if !routeNameRE.MatchString(name) || isIndexName(name) {
		d.errorf(deref(v), p, `%q is not a route name: use 1 to 64 letters, digits, "_", "." or "-", not all digits (those are the labels of unnamed routes), e.g. name: api`, name)
		return ""
	}
	return name
}

// isIndexName reports whether name is all digits, the form of the label
// of an unnamed route.
func isIndexName(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}

// uniqueRouteNames reports a route whose name an earlier route has.
func (d *decoder) uniqueRouteNames(items []*yaml.Node, path string, names []string) {
	seen := map[string]int{}
	for i, name := range names {
		if name == "" {
			continue
		}
		if j, dup := seen[name]; dup {
			d.errorf(items[i], join(index(path, i), "name"), "route name %q is taken by %s; names must be unique", name, index(path, j))
			continue
		}
		seen[name] = i
	}
}

// routeHost decodes a route's host and returns it normalized, or "-"
// when it is invalid, so that no duplicate is reported against it.
func (d *decoder) routeHost(v *yaml.Node, p string) string {
	h, ok := d.str(v, p)
	if !ok {
		return "-"
	}
	norm, msg := normalizeHost(h)
	if msg != "" {
		d.errorf(deref(v), p, "%s", msg)
		return "-"
	}
	return norm
}

// routePath decodes a route's path and returns it, or "" when it is
// invalid.
func (d *decoder) routePath(v *yaml.Node, p string) string {
	rp, ok := d.str(v, p)
	if !ok {
		return ""
	}
	if msg := checkRoutePath(rp); msg != "" {
		d.errorf(deref(v), p, "%s", msg)
		return ""
	}
	return rp
}

// routeHandler decodes the one handler of route r and reports a route
// with none or with more than one, naming those found in file order.
func (d *decoder) routeHandler(s *section, path string, r *Route) {
	kinds := handlersInFileOrder(s)
	switch len(kinds) {
	case 0:
		d.errorf(s.node, path, "a route needs exactly one of %s; found none", strings.Join(d.supported(path, handlerKinds), ", "))
	case 1:
		d.routeHandlerKind(s, path, kinds[0], r)
	default:
		first, second := s.key(kinds[0]), s.key(kinds[1])
		found := fmt.Sprintf("%q (line %d, column %d)", kinds[0], first.Line, first.Column)
		for i, k := range kinds[1:] {
			if i == len(kinds)-2 {
				found += " and "
			} else {
				found += ", "
			}
			found += strconv.Quote(k)
		}
		d.errorf(second, path, "a route needs exactly one of %s; found %s", strings.Join(d.supported(path, handlerKinds), ", "), found)
	}
}

// handlersInFileOrder returns the handler keys present in s, in the order
// they appear in the file.
func handlersInFileOrder(s *section) []string {
	var kinds []string
	for _, k := range handlerKinds {
		if s.has(k) {
			kinds = append(kinds, k)
		}
	}
	slices.SortFunc(kinds, func(a, b string) int {
		ka, kb := s.key(a), s.key(b)
		return cmp.Or(cmp.Compare(ka.Line, kb.Line), cmp.Compare(ka.Column, kb.Column))
	})
	return kinds
}

// routeHandlerKind decodes the handler k of route r (routekinds.go).
func (d *decoder) routeHandlerKind(s *section, path, k string, r *Route) {
	for i := range routeKinds {
		if routeKinds[i].key == k {
			routeKinds[i].decode(d, s.get(k), join(path, k), s, r)
			return
		}
	}
}

// headers decodes a route's request and response header rules.
func (d *decoder) headers(n *yaml.Node, path string) HeaderRules {
	var hr HeaderRules
	s := d.section(n, path, headersKeys.names()...)
	if s == nil {
		return hr
	}
	if v := s.get("request"); v != nil {
		hr.Request = d.headerOps(v, join(path, "request"))
	}
	if v := s.get("response"); v != nil {
		hr.Response = d.headerOps(v, join(path, "response"))
	}
	return hr
}

// managedHeaders frame the message or the connection; the server owns them
// and header rules may not touch them.
var managedHeaders = []string{"Connection", "Content-Length", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// errHostRule explains why header rules may only set Host: a message
// carries exactly one (RFC 9112 section 3.2), which the proxy renders.
const errHostRule = "Host cannot be added or removed by header rules (a request carries exactly one); use set to send another, or proxy.preserve_host"

// headerName decodes, validates and canonicalises one header name.
func (d *decoder) headerName(n *yaml.Node, path string) (string, bool) {
	name, ok := d.checkedStr(n, path, checkHeaderName)
	if !ok {
		return "", false
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if slices.Contains(managedHeaders, canon) {
		d.errorf(deref(n), path, "%s is managed by the server and cannot be changed by header rules", quote(name))
		return "", false
	}
	return canon, true
}

// headerOps decodes set, add and remove. Set values are strings; add values
// are a string or a list of strings (one field each).
func (d *decoder) headerOps(n *yaml.Node, path string) HeaderOps {
	var ops HeaderOps
	s := d.section(n, path, headerOpsKeys.names()...)
	if s == nil {
		return ops
	}
	fields := func(op string) []HeaderKV {
		v := s.get(op)
		if v == nil {
			return nil
		}
		p := join(path, op)
		list, _ := d.pairs(v, p)
		var out []HeaderKV
		first := map[string]*yaml.Node{}
		for _, e := range list {
			kp := mapKey(p, e.key.Value)
			name, ok := d.headerName(e.key, kp)
			if !ok {
				continue
			}
			if k, dup := first[name]; dup {
				d.errorf(e.key, kp, "header %s is listed twice (names are case-insensitive); first at line %d, column %d", quote(name), k.Line, k.Column)
				continue
			}
			first[name] = e.key
			if op == "add" && name == "Host" {
				d.errorf(e.key, kp, "%s", errHostRule)
				continue
			}
			values := []*yaml.Node{e.val}
			if op == "add" && deref(e.val).Kind == yaml.SequenceNode {
				values, _ = d.list(e.val, kp, "header values")
			}
			for i, vn := range values {
				vp := kp
				if len(values) > 1 || vn != e.val {
					vp = index(kp, i)
				}
				val, ok := d.str(vn, vp)
				if !ok {
					continue
				}
				if msg := checkHeaderValue(val); msg != "" {
					d.errorf(deref(vn), vp, "%s", msg)
					continue
				}
				out = append(out, HeaderKV{Name: name, Value: val})
			}
		}
		slices.SortStableFunc(out, func(a, b HeaderKV) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	ops.Set = fields("set")
	ops.Add = fields("add")
	if v := s.get("remove"); v != nil {
		p := join(path, "remove")
		items, _ := d.list(v, p, "header names")
		first := map[string]*yaml.Node{}
		for i, item := range items {
			name, ok := d.headerName(item, index(p, i))
			if !ok {
				continue
			}
			if k, dup := first[name]; dup {
				d.errorf(item, index(p, i), "header %s is listed twice (names are case-insensitive); first at line %d, column %d", quote(name), k.Line, k.Column)
				continue
			}
			first[name] = item
			if name == "Host" {
				d.errorf(item, index(p, i), "%s", errHostRule)
				continue
			}
			ops.Remove = append(ops.Remove, name)
		}
	}
	return ops
}

// static decodes a static file route.
func (d *decoder) static(n *yaml.Node, path string, m *Match) *Static {
	st := defaultStatic()
	s := d.section(n, path, staticKeys.names()...)
	if s == nil {
		return nil
	}
	if v := d.required(s, path, "root", `root: ./site`); v != nil {
		p := join(path, "root")
		if root, ok := d.str(v, p); ok {
			if root == "" {
				d.errorf(deref(v), p, `expected a directory path such as "./site", got ""`)
			} else {
				st.Root = d.resolve(root)
				if msg := checkDir(st.Root, root); msg != "" {
					d.errorf(deref(v), p, "%s", msg)
				}
			}
		}
	}
	if v := s.get("index"); v != nil {
		p := join(path, "index")
		if items, ok := d.list(v, p, "file names"); ok {
			st.Index = []string{}
			d.eachString(items, p, func(item *yaml.Node, ip, name string) {
				if !isFileName(name) {
					d.errorf(item, ip, `expected a file name such as "index.html" (no slashes), got %s`, quote(name))
					return
				}
				st.Index = append(st.Index, name)
			})
		}
	}
	if v := s.get("browse"); v != nil {
		if b, ok := d.boolean(v, join(path, "browse")); ok {
			st.Browse = b
		}
	}
	if v, p, f, ok := d.strKey(s, path, "spa_fallback"); ok && f != "" {
		if msg := checkRoutePath(f); msg != "" || strings.HasSuffix(f, "/") {
			d.errorf(deref(v), p, `expected a file path under the root such as "/index.html", got %s`, quote(f))
		} else if st.Root != "" {
			if msg := checkFile(filepath.Join(st.Root, filepath.FromSlash(f)), f); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
			} else {
				st.SPAFallback = f
			}
		}
	}
	if v := s.get("try_files"); v != nil {
		st.TryFiles, st.TryStatus = d.tryFiles(v, join(path, "try_files"), m)
	}
	d.setEnum(s, "hidden", &st.Hidden, staticKeys.options("hidden")...)
	d.setEnum(s, "follow_symlinks", &st.FollowSymlinks, staticKeys.options("follow_symlinks")...)
	if v, p, cc, ok := d.strKey(s, path, "cache_control"); ok {
		if msg := checkHeaderValue(cc); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		} else {
			st.CacheControl = cc
		}
	}
	if v := s.get("error_pages"); v != nil {
		st.ErrorPages = d.errorPages(v, join(path, "error_pages"))
	}
	if v := s.get("compress"); v != nil {
		d.compress(v, join(path, "compress"), &st.Compress)
	}
	return st
}

// errorPages decodes status -> file (resolved against the config's
// directory; it must exist).
func (d *decoder) errorPages(n *yaml.Node, path string) map[int]string {
	list, _ := d.pairs(n, path)
	out := map[int]string{}
	for _, e := range list {
		p := join(path, e.key.Value)
		code, ok := d.integer(e.key, p, 400, 599)
		if !ok {
			continue
		}
		if _, dup := out[int(code)]; dup {
			d.errorf(e.key, p, "status %d is listed twice", code)
			continue
		}
		f, ok := d.str(e.val, p)
		if !ok {
			continue
		}
		abs := d.resolve(f)
		if msg := checkFile(abs, f); msg != "" {
			d.errorf(deref(e.val), p, "%s", msg)
			continue
		}
		out[int(code)] = abs
	}
	return out
}

// isFileName reports whether name names a file in a directory: not empty,
// not "." or "..", without slashes or NUL.
func isFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00")
}

func (d *decoder) compress(n *yaml.Node, path string, c *Compress) {
	s := d.section(n, path, compressKeys.names()...)
	if s == nil {
		return
	}
	if v := s.get("encodings"); v != nil {
		p := join(path, "encodings")
		items, _ := d.list(v, p, "encodings")
		var encs []string
		for i, item := range items {
			e, ok := d.enum(item, index(p, i), compressKeys.key("encodings").item.enum...)
			if !ok {
				continue
			}
			if slices.Contains(encs, e) {
				d.errorf(item, index(p, i), "encoding %s is listed twice", quote(e))
				continue
			}
			encs = append(encs, e)
		}
		c.Encodings = append([]string{}, encs...)
	}
	d.setInt64(s, "min_bytes", &c.MinBytes, 0)
}

// checkDir checks that abs (written as given) is an existing directory.
func checkDir(abs, given string) string {
	return checkStat(abs, given, "directory", os.FileInfo.IsDir, "is not a directory")
}

// checkFile checks that abs (written as given) is an existing regular file.
func checkFile(abs, given string) string {
	return checkStat(abs, given, "file", func(fi os.FileInfo) bool { return fi.Mode().IsRegular() }, "is not a regular file")
}

// checkStat checks that abs (written as given) exists and is a kind (is
// tells); not is what a message says of it otherwise.
func checkStat(abs, given, kind string, is func(os.FileInfo) bool, not string) string {
	fi, err := os.Stat(abs)
	switch {
	case err != nil && os.IsNotExist(err):
		return fmt.Sprintf("%s %s does not exist%s", kind, quote(given), resolvedTo(abs, given))
	case err != nil:
		return fmt.Sprintf("cannot use %s %s: %v", kind, quote(given), err)
	case !is(fi):
		return fmt.Sprintf("%s %s%s", quote(given), not, resolvedTo(abs, given))
	}
	return ""
}

// respond decodes a fixed response.
func (d *decoder) respond(n *yaml.Node, path string) *Respond {
	r := &Respond{Status: 200}
	s := d.section(n, path, respondKeys.names()...)
	if s == nil {
		return nil
	}
	statusOK := true
	if v := s.get("status"); v != nil {
		var code int64
		if code, statusOK = d.integer(v, join(path, "status"), 200, 599); statusOK {
			r.Status = int(code)
		}
	}
	if v := s.get("body"); v != nil {
		if b, ok := d.str(v, join(path, "body")); ok {
			r.Body = b
			if b != "" && statusOK && (r.Status == 204 || r.Status == 304) {
				d.errorf(deref(v), join(path, "body"), "a %d response has no body; remove body or use another status", r.Status)
			}
		}
	}
	if v := s.get("content_type"); v != nil {
		p := join(path, "content_type")
		if ct, ok := d.str(v, p); ok {
			if msg := checkMediaType(ct); msg != "" {
				d.errorf(deref(v), p, "%s", msg)
			} else {
				r.ContentType = ct
			}
		}
	} else if r.Body != "" {
		r.ContentType = defaultRespondType
	}
	return r
}

// redirect decodes a redirect.
func (d *decoder) redirect(n *yaml.Node, path string, m *Match) *Redirect {
	r := &Redirect{Status: defaultRedirectStatus}
	s := d.section(n, path, redirectKeys.names()...)
	if s == nil {
		return nil
	}
	d.required(s, path, "to", `to: "https://example.com/"`)
	if v, p, to, ok := d.strKey(s, path, "to"); ok {
		if msg := checkRedirectTarget(to); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		} else if t, msg := redirectTemplate(to, m); msg != "" {
			d.errorf(deref(v), p, "%s", msg)
		} else {
			r.To, r.Target = to, t
		}
	}
	if v := s.get("status"); v != nil {
		p := join(path, "status")
		v = deref(v)
		code, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || err != nil || !slices.Contains(redirectKeys.options("status"), strconv.Itoa(code)) {
			d.errorf(v, p, "expected one of %s, got %s", strings.Join(redirectKeys.options("status"), ", "), describe(v))
		} else {
			r.Status = code
		}
	}
	d.setBool(s, "keep_path", &r.KeepPath)
	if r.KeepPath && r.Target != nil {
		d.errorf(deref(s.get("keep_path")), join(path, "keep_path"), "to has placeholders; write {rest} and {query} where the path and query go instead of keep_path")
		r.KeepPath = false
	}
	return r
}

// Small setters: decode key name of s into *dst when present.

func (d *decoder) setBool(s *section, name string, dst *bool) {
	if v := s.get(name); v != nil {
		if b, ok := d.boolean(v, join(s.path, name)); ok {
			*dst = b
		}
	}
}

func (d *decoder) setEnum(s *section, name string, dst *string, options ...string) {
	if v := s.get(name); v != nil {
		if e, ok := d.enum(v, join(s.path, name), options...); ok {
			*dst = e
		}
	}
}

func (d *decoder) setInt(s *section, name string, dst *int, lo, hi int64) bool {
	if v := s.get(name); v != nil {
		if n, ok := d.size(v, join(s.path, name), lo, hi); ok {
			*dst = int(n)
			return true
		}
	}
	return false
}

// setCount32 decodes a whole number within [lo, hi] (hi < 2^32).
func (d *decoder) setCount32(s *section, name string, dst *uint32, lo, hi int64) {
	if v := s.get(name); v != nil {
		if n, ok := d.integer(v, join(s.path, name), lo, hi); ok {
			*dst = uint32(n)
		}
	}
}

// setSize32 decodes a size within [lo, hi] bytes (hi < 2^32).
func (d *decoder) setSize32(s *section, name string, dst *uint32, lo, hi int64) {
	if v := s.get(name); v != nil {
		if n, ok := d.size(v, join(s.path, name), lo, hi); ok {
			*dst = uint32(n)
		}
	}
}

func (d *decoder) setInt64(s *section, name string, dst *int64, lo int64) bool {
	if v := s.get(name); v != nil {
		if n, ok := d.size(v, join(s.path, name), lo, 1<<63-1); ok {
			*dst = n
			return true
		}
	}
	return false
}

func (d *decoder) setDuration(s *section, name string, dst *time.Duration) {
	if v := s.get(name); v != nil {
		if t, ok := d.duration(v, join(s.path, name)); ok {
			*dst = t
		}
	}
}
