package config

import (
	"net/netip"
	"time"
)

// Config is a loaded, defaulted and validated configuration. Every field
// holds its final value: consumers never apply defaults of their own.
// A Config is immutable once Load, Parse or ForDirectory returns it and may
// be shared by all goroutines; its slices and maps must not be modified.
type Config struct {
	File      string            // absolute path of the file it came from ("" when built in code)
	Dir       string            // directory relative paths were resolved against
	Listen    []Listener        // at least one
	Server    Server            // reactor and protocol settings
	Cache     Cache             // static file cache
	MimeTypes map[string]string // extension (with dot, lower case) -> media type, added to the built-in table
	Log       Log               // process log
	AccessLog AccessLog         // request log
	Metrics   Metrics           // Prometheus metrics listener
	Admin     Admin             // the admin API listener
	PIDFile   string            // absolute path of the pid file; "" = none
	Cluster   Cluster           // what several instances share; Cluster.Redis nil = nothing
	Routes    []Route           // at least one, in file order; order carries no meaning for matching
}

// Admin is where the admin API is served; Network "" means it is off.
type Admin struct {
	Listen    string // as written: "unix:/path" or "host:port"
	Network   string // "unix" or "tcp"; "" = no admin API
	Address   string // the socket's absolute path, or "host:port"
	Mode      uint32 // the unix socket's permission bits (socket_mode), default 0600
	TokenFile string // absolute path of the token file; "" = none
	Token     string `json:"-"` // the token file's content, white space trimmed; never printed
	Pos       Pos    // where listen was given, for messages
}

// Metrics is where Prometheus metrics are served.
type Metrics struct {
	Listen string // "" = off; else "host:port", on a listener of its own (not one of Listen)
	Path   string // default "/metrics"
	Stub   string // stub_status: the path of an nginx stub_status page on the metrics listener; "" = none
	Pos    Pos    // where listen was given, for messages
}

// Pos is a position in the config file, for messages. Line and Col are
// 1-based; the zero Pos means "not from a file" (ForDirectory).
type Pos struct {
	Line, Col int
}

// Listener is one address to accept connections on: a plain string in
// the file, or the object form {address, tls, redirect_to_https, protocols}.
type Listener struct {
	Address         string         // "host:port" as written (port may be 0); host "" = all interfaces
	TLS             *TLS           // nil = plain HTTP
	RedirectToHTTPS *HTTPSRedirect // non-nil: a plain listener that answers every request with a redirect to https (redirect_to_https: true)
	Protocols       Protocols      // never empty: default h1 and h2 on TLS listeners, h1 and h2c on plain ones; h2 only with TLS, h2c only without
	HTTP3           bool           // also serve HTTP/3 over QUIC on the same port (UDP); TLS listeners only
	ProxyProtocol   bool           // every connection opens with a PROXY protocol header (v1 or v2) naming the client
	Deny            []netip.Prefix // client addresses closed at accept (after the PROXY header with ProxyProtocol)
	MaxConnsPerAddr int            // connections one address (an IPv6 /64) may hold open at once; 0 = no limit
	Pos             Pos            // where the address (or the object) is written
}

// Protocols is the set of HTTP versions a listener speaks (its protocols
// key). server.http2.enabled: false turns HTTP/2 off on every listener
// whatever its set says, and then every listener's set includes H1. The
// zero value is the empty set, which a loaded Config never holds.
type Protocols uint8

// The members of Protocols.
const (
	ProtoH1  Protocols = 1 << iota // "h1": HTTP/1.1 (and 1.0)
	ProtoH2                        // "h2": HTTP/2 over TLS, negotiated by ALPN (RFC 9113 section 3.2)
	ProtoH2C                       // "h2c": HTTP/2 over cleartext TCP with prior knowledge (RFC 9113 section 3.3)
)

// H1 reports whether the set holds HTTP/1.1.
func (p Protocols) H1() bool { return p&ProtoH1 != 0 }

// H2 reports whether the set holds HTTP/2 over TLS.
func (p Protocols) H2() bool { return p&ProtoH2 != 0 }

// H2C reports whether the set holds HTTP/2 over cleartext.
func (p Protocols) H2C() bool { return p&ProtoH2C != 0 }

// String returns the set as the file writes it, e.g. "[h1, h2c]".
func (p Protocols) String() string {
	s := "["
	for i, name := range protocolNames {
		if p&(1<<i) != 0 {
			if len(s) > 1 {
				s += ", "
			}
			s += name
		}
	}
	return s + "]"
}

// protocolNames are the accepted items of a listener's protocols list, in
// the order of their bits in Protocols.
var protocolNames = []string{"h1", "h2", "h2c"}

// DefaultProtocols is the set of a listener that does not write protocols:
// HTTP/1.1 and HTTP/2 over TLS (tls true), or HTTP/1.1 and h2c.
func DefaultProtocols(tls bool) Protocols {
	if tls {
		return ProtoH1 | ProtoH2
	}
	return ProtoH1 | ProtoH2C
}

// HTTPSRedirect is how a redirect_to_https listener redirects: to the
// request's host, path and query over https, on the port of a TLS listener.
type HTTPSRedirect struct {
	Listener int // index in Config.Listen of the TLS listener whose port the Location carries (the first TLS listener); -1 when there is none: port 443
}

// TLS configures a listener that terminates TLS 1.2 and 1.3.
type TLS struct {
	Certificates            []Certificate // chosen by SNI among their leaves' DNS names (exact before wildcard), before automatic ones; the first one when none matches; at least one unless Automatic is set
	Automatic               *Automatic    // nil = no certificates from an ACME CA
	MinVersion              string        // "1.2" (default) | "1.3"
	HandshakeTimeout        time.Duration // default 10s: from accept until a slot is granted, and from the grant to the end of the handshake
	ClientHelloTimeout      time.Duration // default 5s (at most HandshakeTimeout): from accept until the whole ClientHello has arrived
	MaxHandshakes           int           // default 4096: handshakes in progress at once on this listener, 1..1048576; more wait for a slot
	MaxHandshakesPerAddress int           // default MaxHandshakes/16, at least 1: slots one client address (an IPv6 /64) may hold or wait for; beyond it a handshake is refused
	ClientAuth              *ClientAuth   // nil = no client certificates asked for (except by a certificate's own)
}

// Certificate is a certificate chain and its private key, both PEM files
// that Load has read and checked (readable, parsable, the key matching the
// chain's first certificate). The files are read again when the server
// starts, and whenever they change while it runs.
type Certificate struct {
	Cert string // absolute path: the leaf certificate first, then the intermediates (a "fullchain" file)
	Key  string // absolute path: the leaf's private key (PKCS #1, PKCS #8 or SEC 1)
	Pos  Pos    // where the entry is written

	// ClientAuth, when not nil, replaces the listener's client_auth for
	// handshakes whose server name (SNI) chooses this certificate.
	ClientAuth *ClientAuth
}

// Server holds the reactor and HTTP protocol settings.
type Server struct {
	EventLoops        int            // >= 1 after defaults (0 in the file = runtime.NumCPU())
	ReusePort         bool           // default true
	LoadBalancing     string         // "round-robin" (default) | "least-connections" | "source-addr-hash"
	LockOSThread      bool           // default false
	EdgeTriggered     bool           // default false
	ReadBuffer        int            // bytes, default 64 KiB; rounded up to a power of two, as gnet does
	WriteBuffer       int            // bytes, default 64 KiB; rounded up to a power of two, as gnet does
	MaxBufferedOutput int            // bytes, default 256 KiB
	SocketRecvBuffer  int            // bytes, 0 = kernel default
	SocketSendBuffer  int            // bytes, 0 = kernel default
	TCPNoDelay        bool           // default true
	ServerHeader      string         // default "gale"; "" sends none
	TrustedProxies    []netip.Prefix // peers whose X-Forwarded-For names the client (real_ip); nil = none
	EncodedSlashes    string         // "keep" (default) | "reject" | "decode": what routes do with an encoded slash ("%2F") in a request path; a route may say otherwise
	Limits            Limits         // size limits
	Timeouts          Timeouts       // time limits
	HTTP2             HTTP2          // HTTP/2 settings; a reload applies them to connections accepted afterwards
	HTTP3             HTTP3          // HTTP/3 settings of the listeners with http3: true; read at start
}

// Limits bound request sizes and connection counts.
type Limits struct {
	RequestLine int   // bytes, default DefaultRequestLine; always positive
	HeaderBytes int   // bytes, default DefaultHeaderBytes; always positive
	BodyBytes   int64 // bytes, default DefaultBodyBytes; always positive
	Connections int   // client connections open at once, tunnels included; 0 = as many as the descriptor budget allows
}

// Timeouts are all positive after defaults.
type Timeouts struct {
	ReadHeader time.Duration // default 10s: from the first byte of a request to the end of its head
	ReadBody   time.Duration // default 30s: longest time without progress while reading a body
	Idle       time.Duration // default 60s: keep-alive wait for the next request
	Write      time.Duration // default 60s: longest time without progress while output is pending
	Shutdown   time.Duration // default 30s: graceful stop deadline
	Drain      time.Duration // 0 (default) = none: on a stop, health ready routes answer 503 this long before the graceful stop begins
}

// HTTP2 holds the HTTP/2 settings (RFC 9113): what a connection advertises
// in its SETTINGS frame and enforces. Every field is within its range after
// defaults; the windows and sizes are in bytes.
type HTTP2 struct {
	Enabled              bool   // default true: offer HTTP/2, with ALPN "h2" on TLS listeners and h2c with prior knowledge on plain listeners
	MaxConcurrentStreams uint32 // default 128, 1..1000: SETTINGS_MAX_CONCURRENT_STREAMS
	InitialStreamWindow  uint32 // default 256 KiB, 65535..2^31-1: our receive window per stream, SETTINGS_INITIAL_WINDOW_SIZE
	InitialConnWindow    uint32 // default 1 MiB, 65535..2^31-1: our receive window for the whole connection, raised from 65535 by a WINDOW_UPDATE on stream 0; may be smaller than InitialStreamWindow
	MaxFrameSize         uint32 // default 16 KiB, 16384..16777215: the largest frame payload we accept, SETTINGS_MAX_FRAME_SIZE (RFC 9113 section 6.5.2)
	MaxHeaderListSize    uint32 // default Limits.HeaderBytes brought within 1 KiB..1 MiB: SETTINGS_MAX_HEADER_LIST_SIZE, counted as RFC 7541 section 4.1 does
	MaxRequests          uint32 // default 10000, 1..10^9: streams one connection may carry before a graceful GOAWAY
}

// Cache configures the static file cache, one per server, shared by every
// static route.
type Cache struct {
	MaxBytes     int64         // default 256 MiB: budget over bodies, compressed variants, rendered headers and pinned old versions; positive
	MaxFileBytes int64         // default 1 MiB: larger files are streamed from disk; positive, at most MaxBytes
	Revalidate   time.Duration // default 1s: a cached path is stat'ed at most this often
	NegativeTTL  time.Duration // default 1s: how long "not found" and "denied" are remembered
}

// Log configures the process log.
type Log struct {
	Level  string // "debug" | "info" (default) | "warn" | "error"
	Format string // "text" (default) | "json"
}

// AccessLog configures the request log.
type AccessLog struct {
	Path     string // "" = off, "-" = stdout, else a file path (absolute after Load)
	Format   string // "combined" (default) | "json"
	MaxBytes int64  // rotate past this size, default 100 MiB
	Keep     int    // rotated files kept, default 5; 0 = none
}

// Route is one entry of routes:. Exactly one of Static, Respond, Redirect,
// Proxy, FastCGI is non-nil, or Health is set; the php preset sets both
// FastCGI (with PHP) and Static.
type Route struct {
	Name           string       // the route's label in metrics; "" = its index in the file
	Host           string       // lower case, port and trailing dot removed; "" = any host; "*.example.com" = wildcard; IPv6 in brackets ("[::1]")
	Path           string       // starts with "/"; clean (no "//", "." or ".." segments); "/a/" matches its subtree, "/a" matches "/a" and "/a/..." but not "/ab"
	Match          Match        // further matchers (methods, exact path, path_regex, headers, query, remote); the zero Match matches every request
	Rewrite        *Rewrite     // internal rewrite of path and query before the handler; nil = none
	Access         []AccessRule // client address rules, first match wins, no match denies; nil = every client
	RateLimit      *RateLimit   // nil = none
	BasicAuth      *BasicAuth   // nil = none
	ForwardAuth    *ForwardAuth // nil = none
	Cache          *ProxyCache  // a shared HTTP cache (proxy, fastcgi and php routes); nil = none
	Headers        HeaderRules  // applied on every route kind
	Static         *Static
	Respond        *Respond
	Redirect       *Redirect
	Proxy          *Proxy
	FastCGI        *FastCGI // with Static set too: the php preset (FastCGI.PHP), whose other files Static serves
	Health         string   // "live" or "ready": a health endpoint; "" = not one
	EncodedSlashes string   // "keep" | "reject" | "decode"; "" = the server's (Server.EncodedSlashes)
	Pos            Pos      // where the route starts
}

// HeaderRules hold request and response header edits.
type HeaderRules struct {
	Request  HeaderOps
	Response HeaderOps
}

// HeaderOps are applied in this order: Remove, Set, Add. Names are in
// canonical form (e.g. "X-Env"); Set and Add are sorted by name so output
// is deterministic.
type HeaderOps struct {
	Set    []HeaderKV
	Add    []HeaderKV
	Remove []string
}

// HeaderKV is one header field.
type HeaderKV struct {
	Name, Value string
}

// Respond answers with a fixed response.
type Respond struct {
	Status      int    // default 200
	Body        string // default ""
	ContentType string // default "text/plain; charset=utf-8" when Body is not empty
}

// Redirect answers with a redirect.
type Redirect struct {
	To       string    // absolute URL or absolute path
	Target   *Template // To as a template, when it holds placeholders ({path}, {query}, {rest}, captures); nil otherwise
	Status   int       // 301 | 302 | 303 | 307 | 308 (default 308)
	KeepPath bool      // append the rest of the path (after the route's prefix) and the query
}

// Static serves files under Root.
type Static struct {
	Root           string         // absolute after Load; must exist and be a directory
	Index          []string       // default ["index.html"]; empty (not nil) = no index files; plain names, no slashes
	Browse         bool           // default false: directory listings (HTML, or JSON for clients that ask for it) when no index file exists
	SPAFallback    string         // "" = off; else a path under Root ("/index.html") served for unknown page paths
	TryFiles       []Template     // nil = off; else candidate paths under Root, tried in order (a trailing "/" names a directory), the last one served whatever it is unless TryStatus is set
	TryStatus      int            // 0, or the status (400..599) answered when no candidate of TryFiles exists (a last entry "=404")
	Hidden         string         // "deny" (default) | "allow"
	FollowSymlinks string         // "inside_root" (default) | "always" | "never"
	CacheControl   string         // "" = none
	ErrorPages     map[int]string // status (400..599) -> file path (absolute after Load) served as the body of that error; nil = none
	Compress       Compress       // precompressed sidecars and on-the-fly compression
}

// Compress configures response compression for a static route.
type Compress struct {
	Encodings []string // subset of "zstd", "br", "gzip" in preference order; default all three; empty (not nil) = identity only
	MinBytes  int64    // default 1 KiB: smaller files are not compressed on the fly (sidecars are served whatever their size)
}

// Proxy forwards a route's requests to upstream servers.
type Proxy struct {
	To                 []Upstream     // at least one, in file order, no two alike
	StripPrefix        bool           // default false: remove the route's path prefix before forwarding (the same as Rewrite "/")
	Rewrite            string         // "" = forward the path unchanged; else an absolute path that replaces the route's path prefix
	LoadBalancing      string         // "round-robin" (default) | "least-connections" | "random-two" | "client-ip-hash" | "header-hash" | "cookie-hash"
	HashHeader         string         // header-hash: the request field whose value chooses the upstream (canonical case)
	HashCookie         string         // cookie-hash: the cookie whose value chooses the upstream
	Resolve            Resolve        // how dns+a:// and dns+srv:// upstreams are resolved
	Protocol           string         // what the upstreams speak: "http1" (default) | "h2c" | "h2" (over TLS) | "auto" (over TLS, h2 or HTTP/1.1 as the upstream picks by ALPN)
	MaxIdlePerUpstream int            // idle keep-alive connections kept per upstream and per event loop, default 64; 0 = none kept
	MaxConns           int            // connections to each upstream at once over all loops together; requests beyond wait; 0 = no limit
	Timeouts           ProxyTimeouts  // all positive
	HealthCheck        HealthCheck    // active and passive health
	Retries            int            // default 1, 0..10: further attempts for a request that reached no upstream
	TrustedProxies     []netip.Prefix // masked; clients whose X-Forwarded-* and Forwarded fields are kept; nil = none
	PreserveHost       bool           // default false: send the upstream's host; true: send the client's Host
	Upgrade            []string       // default [websocket]: protocols (lower case, as tokens of an Upgrade field) a client may switch to through the route; empty = none; never h2c
	TLS                *UpstreamTLS   // how the https:// upstreams are spoken to; set (with defaults) whenever one of To is https://, else nil
}

// Upstream is one entry of proxy.to.
type Upstream struct {
	Network string // "tcp" or "unix"
	Address string // "host:port" for tcp (IPv6 in brackets, port always present); an absolute socket path for unix
	Host    string // the Host field sent when preserve_host is false: host[:port] as written; "localhost" for unix sockets
	Raw     string // as written in the file, for messages and logs
	TLS     bool   // https://: spoken to over TLS (Proxy.TLS)

	// Discover is how the entry becomes upstreams: "" (it is one), "a"
	// (dns+a://name:port: each address of name's A records, at Port) or
	// "srv" (dns+srv://_service._proto.name: each target and port of the
	// SRV records of Name). Address is then empty.
	Discover string
	Name     string // the DNS name queried, fully qualified (with the trailing dot)
	Port     string // dns+a: the port of every address
}

// Resolve configures how discovered upstreams (dns+a://, dns+srv://)
// are resolved: again when the records' TTL runs out, bounded by MinTTL
// and MaxTTL.
type Resolve struct {
	MinTTL   time.Duration // default 1s: records are asked again no sooner than this (also the retry after a failure)
	MaxTTL   time.Duration // default 60s: and no later than this, whatever their TTL
	Timeout  time.Duration // default 2s: one query taking longer fails
	Resolver string        // "host:port" of the DNS server; "" = the first nameserver of /etc/resolv.conf
}

// ProxyTimeouts bound the exchanges with upstreams. All are positive.
type ProxyTimeouts struct {
	Connect        time.Duration // default 2s: dialing an upstream; past it the attempt fails (504 when no retry is left)
	ResponseHeader time.Duration // default 30s: from the request to the end of the response head (504), and the longest pause between two reads of a response body
	Idle           time.Duration // default 90s: a pooled keep-alive connection unused this long is closed; also a tunnel (Upgrade) without traffic either way
}

// HealthCheck configures active checks (when Path is set) and passive
// health. An upstream out of service is skipped by load balancing as long
// as another one is in service.
type HealthCheck struct {
	Path         string        // "" = no active checks; else the path (and query) requested with GET
	Interval     time.Duration // default 5s: time between two active checks of one upstream
	Timeout      time.Duration // default 2s: an active check taking longer fails
	ExpectStatus int           // default 200: the status an active check must get
	Fails        int           // default 3: consecutive failed active checks that take an upstream out
	Passes       int           // default 2: consecutive passed active checks that bring it back
	Passive      PassiveHealth // failures of real requests
}

// PassiveHealth takes an upstream out when real requests fail: Fails
// failures (refused or timed-out connects, resets, garbage, response
// timeouts; not error statuses) within Window take it out for Cooldown.
type PassiveHealth struct {
	Fails    int           // default 3; 0 = off
	Window   time.Duration // default 10s
	Cooldown time.Duration // default 30s
}
