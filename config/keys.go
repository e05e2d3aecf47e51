package config

import "fmt"

// The key tables below describe every key of the config file: its name,
// the shape of its value, its default and its meaning. The decoder takes
// the keys each mapping may hold and the options of every enumeration from
// them, and JSONSchema renders them as a JSON Schema for editors, so the
// two cannot drift apart: a key the tables do not list is an unknown key
// to the decoder too.

// keyType is the shape of a key's value.
type keyType int

const (
	typeString   keyType = iota // a string
	typeBool                    // true or false
	typeInt                     // a whole number within lo..hi (or one of enum)
	typeSize                    // a size: bytes as a whole number, or a string with a unit
	typeDuration                // a positive Go duration string
	typeEnum                    // one of the strings in enum
	typeSection                 // a mapping of the known keys in keys
	typeList                    // a list of item
	typeMap                     // a mapping of user-chosen names (matching pattern) to item
	typeAnyOf                   // any one of alts
)

// keySpec describes one key, or the items of a list or map.
type keySpec struct {
	name     string
	typ      keyType
	doc      string     // one or two sentences
	def      string     // the default as the file would write it (YAML); "" = none, or a default derived from other keys (described in doc)
	enum     []string   // typeEnum options; typeInt values (as decimal strings)
	numbers  bool       // typeEnum: options may also be written as unquoted numbers (min_version: 1.3)
	lo, hi   int64      // typeInt and typeSize bounds, inclusive
	keys     []*keySpec // typeSection
	item     *keySpec   // typeList and typeMap values
	pattern  string     // typeMap: what a name must match (a regular expression); typeString: what the value must match
	alts     []*keySpec // typeAnyOf
	required bool       // the enclosing mapping must hold this key
	oneOf    []string   // typeSection: exactly one of these keys must be present
	anyOf    []string   // typeSection: at least one of these keys must be present
	together []string   // typeSection: these keys are present all or none
	minItems int        // typeList: at least this many items
	unique   bool       // typeList: no item twice
}

// names returns the keys of a section, in table order.
func (k *keySpec) names() []string {
	out := make([]string, len(k.keys))
	for i, c := range k.keys {
		out[i] = c.name
	}
	return out
}

// key returns the spec of the section's key name. It panics when the
// table has no such key: a decoder asking for one is a programming error.
func (k *keySpec) key(name string) *keySpec {
	for _, c := range k.keys {
		if c.name == name {
			return c
		}
	}
	panic(fmt.Sprintf("config: key table %q has no key %q", k.name, name))
}

// options returns the enumeration options of the section's key name.
func (k *keySpec) options(name string) []string {
	return k.key(name).enum
}

// Builders, so that the tables read as a list of keys.

func sectionKey(name, doc string, keys ...*keySpec) *keySpec {
	return &keySpec{name: name, typ: typeSection, doc: doc, keys: keys}
}

func strKey(name, doc string) *keySpec { return &keySpec{name: name, typ: typeString, doc: doc} }

func boolKey(name, def, doc string) *keySpec {
	return &keySpec{name: name, typ: typeBool, def: def, doc: doc}
}

func intKey(name string, lo, hi int64, def, doc string) *keySpec {
	return &keySpec{name: name, typ: typeInt, lo: lo, hi: hi, def: def, doc: doc}
}

func sizeKey(name string, lo, hi int64, def, doc string) *keySpec {
	return &keySpec{name: name, typ: typeSize, lo: lo, hi: hi, def: def, doc: doc}
}

func durationKey(name, def, doc string) *keySpec {
	return &keySpec{name: name, typ: typeDuration, def: def, doc: doc}
}

func enumKey(name string, options []string, def, doc string) *keySpec {
	return &keySpec{name: name, typ: typeEnum, enum: options, def: def, doc: doc}
}

func listKey(name string, item *keySpec, doc string) *keySpec {
	return &keySpec{name: name, typ: typeList, item: item, doc: doc}
}

func mapKeyOf(name, pattern string, item *keySpec, doc string) *keySpec {
	return &keySpec{name: name, typ: typeMap, pattern: pattern, item: item, doc: doc}
}

func anyOf(name, doc string, alts ...*keySpec) *keySpec {
	return &keySpec{name: name, typ: typeAnyOf, doc: doc, alts: alts}
}

// must marks a key required.
func (k *keySpec) must() *keySpec { k.required = true; return k }

// needsAny makes a section require at least one of names.
func (k *keySpec) needsAny(names ...string) *keySpec { k.anyOf = names; return k }

// allOrNone says that the section's keys names come together.
func (k *keySpec) allOrNone(names ...string) *keySpec { k.together = names; return k }

// atLeast sets a list's minimum length.
func (k *keySpec) atLeast(n int) *keySpec { k.minItems = n; return k }

// distinct forbids repeated list items.
func (k *keySpec) distinct() *keySpec { k.unique = true; return k }

// withDefault sets the default of a list or map key.
func (k *keySpec) withDefault(def string) *keySpec { k.def = def; return k }

// oneOrList accepts one item, or a list of at least one.
func oneOrList(name string, item *keySpec, doc string) *keySpec {
	return anyOf(name, doc, item, listKey("", item, "").atLeast(1))
}

// encodedSlashesDoc describes encoded_slashes, a server and a route key.
const encodedSlashesDoc = `What a route does with an encoded slash ("%2F") in a request path, which routing and access rules always read as "/": "keep" forwards it as sent; "reject" answers 400; "decode" forwards "/".`

// Enumerations the decoder checks.
var (
	loadBalancingOptions  = []string{"round-robin", "least-connections", "source-addr-hash"}
	proxyBalancingOptions = []string{"round-robin", "least-connections", "random-two", "client-ip-hash", "header-hash", "cookie-hash"}
	proxyProtocolOptions  = []string{"http1", "h2c", "h2", "auto"}
	encodingOptions       = []string{"zstd", "br", "gzip"}
	encodedSlashOptions   = []string{"keep", "reject", "decode"}
	redirectStatuses      = []string{"301", "302", "303", "307", "308"}
)

var certificateKeys = sectionKey("", "A certificate chain and its private key.",
	strKey("cert", "PEM file: the leaf certificate first, then the intermediates (a fullchain file).").must(),
	strKey("key", "PEM file: the leaf's private key (PKCS #1, PKCS #8 or SEC 1).").must(),
	withName(clientAuthKeys, "client_auth", "Client certificates for handshakes whose server name (SNI) chooses this certificate, instead of the listener's client_auth."),
)

var tlsKeys = sectionKey("tls", "Terminate TLS 1.2 and 1.3 on this listener.",
	listKey("certificates", certificateKeys, "Chosen by SNI among their leaves' DNS names (exact before wildcard), before automatic ones; the first one when none matches. Required unless automatic is given.").atLeast(1),
	automaticKeys,
	&keySpec{name: "min_version", typ: typeEnum, enum: TLSVersions, numbers: true, def: `"1.2"`, doc: "Lowest TLS version accepted."},
	durationKey("handshake_timeout", "10s", "How long a TLS handshake may take once it has a slot; a connection also waits at most this long from accept for its ClientHello and a free slot."),
	durationKey("client_hello_timeout", "5s", "From accept until the whole ClientHello has arrived; at most handshake_timeout."),
	intKey("max_handshakes", 1, maxMaxHandshakes, "4096", "Handshakes in progress at once on this listener; more wait for a slot."),
	intKey("max_handshakes_per_address", 1, maxMaxHandshakes, "", "Handshake slots one client address (an IPv6 /64) may hold or wait for; at most max_handshakes; default max_handshakes/16, at least 1."),
	clientAuthKeys,
).needsAny("certificates", "automatic")

var listenerKeys = sectionKey("", "A listener in object form.",
	strKey("address", `"host:port" to accept connections on; host "" is all interfaces, port 0 picks a free port.`).must(),
	tlsKeys,
	boolKey("redirect_to_https", "false", "A plain listener that answers every request with a redirect to https, on the port of the first TLS listener."),
	listKey("protocols", enumKey("", protocolNames, "", ""), "HTTP versions spoken: h1, h2 (TLS only, by ALPN) and h2c (cleartext, prior knowledge); default [h1, h2] with tls, [h1, h2c] without.").atLeast(1).distinct(),
	boolKey("http3", "false", "Also serve HTTP/3 over QUIC on the same port (UDP), advertised by Alt-Svc on this listener's HTTP/1.1 and HTTP/2 responses; TLS listeners only (see server.http3)."),
	listKey("deny", &keySpec{typ: typeString, doc: "An address or CIDR."}, "Client addresses whose connections are closed at accept, unanswered (after the PROXY header on a proxy_protocol listener).").distinct(),
	intKey("max_conns_per_address", 0, 1<<20, "0", "Connections one client address (an IPv6 /64) may hold open on this listener at once; more are closed at accept, unanswered (nginx's limit_conn). 0 = no limit."),
	boolKey("proxy_protocol", "false", "Every connection opens with a PROXY protocol header (HAProxy's, version 1 or 2) from the load balancer in front: its client address is the connection's; a connection without a valid one is closed. Only for listeners that nothing but the balancer can reach."),
)

var addressSpec = anyOf("", "", &keySpec{typ: typeString, doc: `"host:port"`}, listenerKeys)

var limitsKeys = sectionKey("limits", "Size limits.",
	sizeKey("request_line", 1, maxBuffer, formatSize(DefaultRequestLine), "Longest request line (414 beyond)."),
	sizeKey("header_bytes", 1, maxBuffer, formatSize(DefaultHeaderBytes), "Largest request head (431 beyond)."),
	sizeKey("body_bytes", 1, 1<<63-1, formatSize(DefaultBodyBytes), "Largest request body (413 beyond)."),
	intKey("connections", 0, 1<<31-1, "0", "Client connections open at once, a WebSocket or other tunnel counting as its client's connection until it ends; 0 = no cap of its own: the descriptor budget alone limits them."),
)

var timeoutsKeys = sectionKey("timeouts", "Time limits.",
	durationKey("read_header", "10s", "From the first byte of a request to the end of its head; a client trickling header bytes is cut off with 408."),
	durationKey("read_body", "30s", "Longest time without progress while reading a body."),
	durationKey("idle", "60s", "Keep-alive wait for the next request."),
	durationKey("write", "60s", "Longest time without progress while output is pending; progress is bytes reaching the socket, so output that keeps growing for a client that reads nothing is no progress."),
	durationKey("shutdown", "30s", "Graceful stop deadline."),
	durationKey("drain", "", "On a stop, how long health ready routes answer 503 while everything else is served as usual, before the graceful stop begins; absent = no delay."),
)

var http2Keys = sectionKey("http2", "HTTP/2 settings (RFC 9113); a reload applies them to connections accepted afterwards.",
	boolKey("enabled", "true", "Offer HTTP/2: ALPN h2 on TLS listeners, h2c with prior knowledge (the client opens with the connection preface) on plain ones, each where the listener's protocols allow it; false serves HTTP/1.1 only, on every listener (each must then include h1)."),
	intKey("max_concurrent_streams", 1, maxH2Streams, "128", "Streams open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS)."),
	sizeKey("initial_stream_window", minH2Window, maxH2Window, "256KiB", "What a client may send on one stream before gale reads it: the receive window per stream, SETTINGS_INITIAL_WINDOW_SIZE."),
	sizeKey("initial_connection_window", minH2Window, maxH2Window, "1MiB", "The receive window of all streams of a connection together (raised from the protocol's 65535 by a WINDOW_UPDATE after the preface); when smaller than initial_stream_window it bounds every stream as well."),
	sizeKey("max_frame_size", minH2FrameSize, maxH2FrameSize, "16KiB", "Largest frame payload accepted, SETTINGS_MAX_FRAME_SIZE (RFC 9113 section 6.5.2)."),
	sizeKey("max_header_list_size", minH2HeaderList, maxH2HeaderList, "", "Largest request field section, counted as HPACK does (each field's name and value plus 32 bytes), SETTINGS_MAX_HEADER_LIST_SIZE; default limits.header_bytes brought within 1KiB..1MiB."),
	intKey("max_requests", 1, maxH2Requests, "10000", "Streams one connection may carry; then a graceful GOAWAY lets the streams in flight finish, and the client opens another connection for more."),
)

var serverKeys = sectionKey("server", "Reactor and protocol settings.",
	intKey("event_loops", 0, maxEventLoop, "0", "gnet event loops; 0 = one per CPU."),
	boolKey("reuse_port", "true", "Each loop accepts on its own SO_REUSEPORT listener (the kernel spreads connections)."),
	enumKey("load_balancing", loadBalancingOptions, "round-robin", "With reuse_port false, how the accepting reactor hands connections to loops."),
	boolKey("lock_os_thread", "false", "Lock each event loop to an OS thread."),
	boolKey("edge_triggered", "false", "Edge-triggered epoll."),
	sizeKey("read_buffer", 1, maxBuffer, "64KiB", "gnet's per-loop read buffer, rounded up to a power of two."),
	sizeKey("write_buffer", 1, maxBuffer, "64KiB", "gnet's write buffer hint, rounded up to a power of two."),
	sizeKey("max_buffered_output", 1, maxBuffer, "256KiB", "Per connection: a response body larger than this leaves the loop and is sent from a goroutine; parsing pauses while more than this is queued."),
	sizeKey("socket_recv_buffer", 0, maxBuffer, "0", "SO_RCVBUF; 0 = kernel default."),
	sizeKey("socket_send_buffer", 0, maxBuffer, "0", "SO_SNDBUF; 0 = kernel default."),
	boolKey("tcp_no_delay", "true", "TCP_NODELAY."),
	&keySpec{name: "server_header", typ: typeString, def: "gale", doc: `The Server header; "" sends none.`},
	listKey("trusted_proxies", &keySpec{typ: typeString, doc: "An address or CIDR."}, "Peers (load balancers, CDNs) whose X-Forwarded-For names the client: a request from one has as its client the rightmost address of that field that is not itself trusted, for access rules, rate limits, logs and the forwarded fields (nginx's real_ip). A reload applies it.").distinct(),
	limitsKeys,
	timeoutsKeys,
	http2Keys,
	http3Keys,
	enumKey("encoded_slashes", encodedSlashOptions, "keep", encodedSlashesDoc+" A route's own encoded_slashes overrides it."),
)

var cacheKeys = sectionKey("cache", "The static file cache, one per server, shared by every static route.",
	sizeKey("max_bytes", 1, 1<<63-1, "256MiB", "Budget over everything the cache holds: bodies, compressed variants, rendered heads and old versions still being sent; when full it evicts (SIEVE), it never just refuses."),
	sizeKey("max_file_bytes", 1, 1<<63-1, "1MiB", "Larger files keep only their metadata and rendered heads in the cache and are streamed from disk; at most max_bytes."),
	durationKey("revalidate", "1s", "A cached path is stat'ed at most this often; a changed file becomes a new version, a deleted one disappears."),
	durationKey("negative_ttl", "1s", `How long "not found" and "permission denied" are remembered.`),
)

var logKeys = sectionKey("log", "The process log.",
	enumKey("level", []string{"debug", "info", "warn", "error"}, "info", "Lowest level written; gnet's own log lines go through it too."),
	enumKey("format", []string{"text", "json"}, "text", `Line format; with json every line gale writes is one JSON object, the startup summary included (records "listening" with url, "config" with summary): set access_log.format: json too when the access log goes to stdout.`),
)

var accessLogKeys = sectionKey("access_log", "The request log.",
	&keySpec{name: "path", typ: typeString, def: `""`, doc: `"" = off (it then costs nothing), "-" = stdout, else a file path (its directory must exist).`},
	enumKey("format", []string{"combined", "json"}, "combined", "Line format: combined (Apache's and nginx's), or json (Caddy's access log entries)."),
	sizeKey("max_bytes", 1, 1<<63-1, "100MiB", "Rotate past this size."),
	intKey("keep", 0, 1000, "5", "Rotated files kept (access.log.1 is the newest); 0 = none."),
)

var metricsKeys = sectionKey("metrics", "Prometheus metrics, served on a listener of their own (off the event loops).",
	&keySpec{name: "listen", typ: typeString, def: `""`, doc: `"" = off; else "host:port" of a listener of its own, not one of listen. Keep it private (e.g. 127.0.0.1:9180): anyone who reaches it reads the server's counters.`},
	&keySpec{name: "path", typ: typeString, def: "/metrics", doc: "The path the metrics are served at; other paths answer 404."},
	&keySpec{name: "stub_status", typ: typeString, def: `""`, doc: `A path of the metrics listener that answers in the format of nginx's stub_status (for nginx-prometheus-exporter and other nginx tools); "" = none.`},
)

var adminKeys = sectionKey("admin", "The admin API (GET /config, POST /load, GET /routes, GET /upstreams, POST /purge, POST /stop, GET /status), on a listener of its own; absent = none.",
	strKey("listen", `"unix:/path/to/gale.sock" (created with mode 0600: the file's permissions are the authentication) or "host:port" (a bearer token is required: give token_file).`).must(),
	enumKey("socket_mode", []string{"0600", "0660"}, `"0600"`, `The unix socket's permissions, quoted: "0600" lets gale's user (and root) connect, "0660" its group too.`),
	strKey("token_file", "A file holding the bearer token every request must carry (Authorization: Bearer TOKEN), read at load; at least 16 characters after trimming white space. Required with a TCP address; optional on a unix socket."),
)

// headerNamePattern is what header rule names look like (RFC 9110 section
// 5.6.2 tokens); the decoder checks them further.
const headerNamePattern = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"

var headerOpsKeys = sectionKey("", "Header edits, applied in this order: remove, set, add.",
	mapKeyOf("set", headerNamePattern, strKey("", "The field's value."), "Fields to set, replacing any of the same name."),
	mapKeyOf("add", headerNamePattern, oneOrList("", strKey("", ""), "One value, or several fields of the same name."), "Fields to add."),
	listKey("remove", &keySpec{typ: typeString, pattern: headerNamePattern}, "Field names to remove.").distinct(),
)

var headersKeys = sectionKey("headers", "Request and response header rules, applied on every route kind.",
	withName(headerOpsKeys, "request", "Edits of the request, applied remove, set, add, before the handler (the proxy forwards them)."),
	withName(headerOpsKeys, "response", "Edits of every response of the route, errors included, applied remove, set, add."),
)

// withName returns a copy of a section under another name and doc.
func withName(k *keySpec, name, doc string) *keySpec {
	c := *k
	c.name, c.doc = name, doc
	return &c
}

var compressKeys = sectionKey("compress", "Precompressed sidecars and on-the-fly compression.",
	listKey("encodings", enumKey("", encodingOptions, "", ""), "Codings served, in preference order, from precompressed sidecars or compressed on the fly; [] serves identity only (and no Vary).").distinct().withDefault("[zstd, br, gzip]"),
	sizeKey("min_bytes", 0, 1<<63-1, "1KiB", "Smaller files are not compressed on the fly (sidecars are served whatever their size)."),
)

var staticKeys = sectionKey("static", "Serve files under root.",
	strKey("root", "Directory served; it must exist.").must(),
	listKey("index", &keySpec{typ: typeString, doc: "A file name, no slashes."}, "Index files tried for a directory; [] = none.").withDefault("[index.html]"),
	boolKey("browse", "false", "List a directory that has no index file: HTML, or JSON when the client's Accept asks for application/json only."),
	&keySpec{name: "spa_fallback", typ: typeString, def: `""`, doc: `A file under root ("/index.html") served with 200 for unknown paths that look like pages: GET or HEAD whose Accept names text/html, or whose last segment has no extension; "" = off.`},
	listKey("try_files", &keySpec{typ: typeString, doc: `A path template under root ("{path}", "{path}/", "/index.html"), or "=CODE" last.`},
		`Candidates tried in order, e.g. ["{path}", "{path}/", /index.html] (a trailing "/" names a directory); the last is the fallback, or "=CODE" (400..599) answers that status when none exists.`).atLeast(2),
	enumKey("hidden", []string{"deny", "allow"}, "deny", "Dot files and directories: deny answers 404 for them (and leaves them out of listings); allow serves them."),
	enumKey("follow_symlinks", []string{"inside_root", "always", "never"}, "inside_root", "Which symbolic links are followed: inside_root those that stay under root, always every one, never none (a link on the path is refused)."),
	&keySpec{name: "cache_control", typ: typeString, def: `""`, doc: `The Cache-Control header of files served (also on their 304 and 206 responses); "" = none.`},
	mapKeyOf("error_pages", "^[45][0-9][0-9]$", strKey("", "A file served as the body of that error."), "Status (400..599) -> file, e.g. {404: 404.html} (relative to the config's directory)."),
	compressKeys,
)

var respondKeys = sectionKey("respond", "Answer with a fixed response.",
	intKey("status", 200, 599, "200", "Status code."),
	&keySpec{name: "body", typ: typeString, def: `""`, doc: "Response body (none is sent with 204 and 304)."},
	strKey("content_type", `Content-Type; default "text/plain; charset=utf-8" when body is not empty.`),
)

var redirectKeys = sectionKey("redirect", "Answer with a redirect.",
	strKey("to", "An absolute URL or an absolute path; placeholders ({path}, {query}, {rest}, path_regex groups) may stand in its path, query and fragment, never in the scheme or host.").must(),
	&keySpec{name: "status", typ: typeInt, enum: redirectStatuses, def: "308", doc: "Redirect status."},
	boolKey("keep_path", "false", "Append the rest of the path (after the route's prefix) and the query; not with placeholders in to (write {rest} and {query} there)."),
)

var proxyTimeoutsKeys = sectionKey("timeouts", "Time limits of the exchanges with upstreams.",
	durationKey("connect", "2s", "Dialing an upstream; past it the attempt fails (504 when no retry is left)."),
	durationKey("response_header", "30s", "From the end of the request to the end of the response head (504), and the longest pause between two reads of a response body (the client's connection is then closed)."),
	durationKey("idle", "90s", "A pooled keep-alive connection unused this long is closed; also a tunnel (WebSocket) without traffic either way."),
)

var passiveKeys = sectionKey("passive", "Take an upstream out when real requests fail (refused or timed-out connects, resets, garbage, response timeouts; not error statuses).",
	intKey("fails", 0, 1000, "3", "Failures within window that take an upstream out; 0 = off."),
	durationKey("window", "10s", "The window failures are counted in."),
	durationKey("cooldown", "30s", "How long an upstream stays out."),
)

var healthCheckKeys = sectionKey("health_check", "Active checks (when path is set) and passive health.",
	strKey("path", `The path (and query) requested with GET on a fresh connection to every upstream, such as "/healthz"; absent = no active checks.`),
	durationKey("interval", "5s", "Time between two active checks of one upstream."),
	durationKey("timeout", "2s", "An active check taking longer fails."),
	intKey("expect_status", 100, 599, "200", "The status an active check must get."),
	intKey("fails", 1, 1000, "3", "Consecutive failed active checks that take an upstream out."),
	intKey("passes", 1, 1000, "2", "Consecutive passed active checks that bring it back."),
	passiveKeys,
)

var resolveKeys = sectionKey("resolve", "How dns+a:// and dns+srv:// upstreams are resolved.",
	durationKey("min_ttl", "1s", "Records are asked again no sooner than this, whatever their TTL; also the wait before asking again after a failure (the last good addresses stay in use)."),
	durationKey("max_ttl", "60s", "Records are asked again no later than this, whatever their TTL."),
	durationKey("timeout", "2s", "One DNS query taking longer fails."),
	strKey("resolver", `The DNS server asked, "host:port" (such as "127.0.0.1:53"); absent = the first nameserver of /etc/resolv.conf.`),
)

var proxyKeys = sectionKey("proxy", "Forward requests to upstream servers.",
	oneOrList("to", &keySpec{typ: typeString, doc: `"host:port", "unix:/path", "http://host[:port]", "https://host[:port]" (no path; over TLS, see tls), "dns+a://name:port" (every address of name's A records, at port) or "dns+srv://_service._proto.name" (every target and port of the SRV records); discovered addresses are asked again as their TTL runs out (see resolve), and one that disappears is drained`}, "Upstreams, no two alike; one string is a list of one.").must(),
	boolKey("strip_prefix", "false", `Remove the route's path prefix before forwarding: "/api/users" goes upstream as "/users" (the same as rewrite: "/").`),
	strKey("rewrite", `An absolute path that replaces the route's path prefix: "/v2/" sends "/api/users" as "/v2/users". Not with strip_prefix.`),
	enumKey("load_balancing", proxyBalancingOptions, "round-robin", "How requests are spread over the upstreams: round-robin; least-connections (fewest requests in flight on this event loop); random-two (the less busy of two at random); client-ip-hash (the same client address always goes to the same upstream; behind trusted_proxies, the address they report); header-hash and cookie-hash (the same value of the field hash_header or of the cookie hash_cookie goes to the same upstream; without it, as client-ip-hash). The hashing policies use rendezvous hashing over the upstreams' addresses: every instance of gale sends a client to the same upstream, and an upstream that goes or comes moves only the clients it takes or had."),
	strKey("hash_header", "The request field whose value chooses the upstream under load_balancing: header-hash (and only then)."),
	strKey("hash_cookie", "The cookie whose value chooses the upstream under load_balancing: cookie-hash (and only then)."),
	resolveKeys,
	enumKey("protocol", proxyProtocolOptions, "http1", "What the upstreams speak: HTTP/1.1, HTTP/2 over cleartext with prior knowledge (h2c: gRPC, with trailers both ways), HTTP/2 over TLS by ALPN (h2), or over TLS whichever of h2 and HTTP/1.1 the upstream picks by ALPN (auto); h2 and auto: upstreams over TLS only."),
	intKey("max_idle_per_upstream", 0, maxIdlePerUpstreamCap, "64", "Idle keep-alive connections kept per upstream and per event loop; 0 closes each after its response."),
	intKey("max_conns", 0, maxProxyConns, "0", "Connections to each upstream at once over all event loops together; a request that finds none idle while all are in use waits, first come first served, for the next one put back on its loop (or a place freed on any loop), up to the connect timeout (504). 0 = no limit. Routes naming the same upstream share its connections (the latest route to use them sets the bounds); bursts of HTTP/2 streams then reuse a few kept-alive connections instead of dialing one each. HTTP/1.1 upstreams only."),
	proxyTimeoutsKeys,
	healthCheckKeys,
	intKey("retries", 0, maxProxyRetries, "1", "Further attempts for a request that reached no upstream (a failed connect: another upstream is tried), or that was written to a pooled connection the upstream had just closed when it is safe to repeat (an idempotent method without a body)."),
	listKey("trusted_proxies", &keySpec{typ: typeString, doc: "An address or CIDR."}, "Clients whose forwarding fields are kept (X-Forwarded-For appended to; X-Forwarded-Proto, X-Forwarded-Host, X-Real-IP, Forwarded and the like kept as they are); from anyone else they are removed, and gale sets its own.").distinct(),
	boolKey("preserve_host", "false", "Send the client's Host instead of the upstream's (localhost for Unix sockets)."),
	listKey("upgrade", &keySpec{typ: typeString, pattern: upgradeTokenPattern, doc: `A protocol name (any version of it, as "websocket") or "name/version"; never "h2c".`}, "Protocols a client may switch to through the route (Upgrade, RFC 9110 section 7.8); an Upgrade naming none of them is forwarded as a plain request. [] = none.").distinct().withDefault("[websocket]"),
	upstreamTLSKeys,
)

// upstreamTLSKeys are proxy.tls: how gale speaks TLS to the route's
// https:// upstreams.
var upstreamTLSKeys = sectionKey("tls", "TLS to the route's upstreams: with this section every upstream is reached over TLS (none may be http://); without it only the https:// ones, with the defaults.",
	strKey("server_name", "The name sent by SNI and verified in the upstream's certificate; default each upstream's host."),
	strKey("ca", "PEM file of the CA certificates the upstream's chain must lead to; default the system's roots."),
	strKey("certificate", "PEM file: a client certificate chain presented to upstreams that ask for one (mutual TLS); needs key."),
	strKey("key", "PEM file: the private key of certificate."),
	&keySpec{name: "min_version", typ: typeEnum, enum: TLSVersions, numbers: true, def: `"1.2"`, doc: "Lowest TLS version offered to the upstreams."},
	boolKey("insecure_skip_verify", "false", "Accept any certificate the upstream presents, unverified (logged at start); for tests only."),
).allOrNone("certificate", "key")

// fastcgiBalancingOptions are the load balancing policies of FastCGI
// routes.
var fastcgiBalancingOptions = []string{"round-robin", "least-connections"}

var fastcgiTimeoutsKeys = sectionKey("timeouts", "Time limits of the exchanges with the FastCGI servers.",
	durationKey("connect", "2s", "Connecting to a server; past it the attempt fails (504 when no retry is left)."),
	durationKey("response_header", "60s", "From the request to the end of the CGI response head (504), and the longest pause between two reads of the response body (the client's connection then closes)."),
	durationKey("idle", "60s", "A pooled connection unused this long is closed."),
)

var fastcgiHealthKeys = sectionKey("health_check", "Passive health (active checks are not built for FastCGI servers).",
	passiveKeys,
)

// fastcgiCommon are the keys the fastcgi route kind and the php preset
// share.
func fastcgiCommon() []*keySpec {
	return []*keySpec{
		oneOrList("to", &keySpec{typ: typeString, doc: `"unix:/run/php/php-fpm.sock" or "host:port"`}, "FastCGI servers, no two alike; one string is a list of one.").must(),
		strKey("root", "The document root: DOCUMENT_ROOT, under which SCRIPT_FILENAME is found; must exist.").must(),
		mapKeyOf("env", "^[A-Za-z_][A-Za-z0-9_]*$", strKey("", "The value."), "User-defined variables (name -> value) sent with every request, after the CGI ones; names the server sets (SCRIPT_NAME, HTTP_*, ...) are refused."),
		enumKey("load_balancing", fastcgiBalancingOptions, "round-robin", "How requests are spread over the servers: round-robin, or least-connections (fewest requests in flight on this event loop)."),
		intKey("max_conns", 1, maxFastCGIConns, "4", "Connections to each server over all event loops together (not per loop); requests beyond wait, in order, for the next one free on any loop (504 past timeouts.response_header). PHP-FPM gives each connection a worker until it closes: keep it at most the pool's pm.max_children (5 in PHP-FPM's default pool). Set higher by mistake, it costs connections, not hung requests: while a new connection waits for its first answer (in FPM's backlog), connections that free up are closed instead of kept. Routes naming the same server share its connections (the latest route to use them sets the bound)."),
		boolKey("keep_alive", "true", "Keep connections open between requests (FCGI_KEEP_CONN) until timeouts.idle, which saves a connect per request; false closes each after its request, as nginx does by default, so no idle connection holds a PHP-FPM worker (choose it when FPM's workers are shared with other clients)."),
		fastcgiTimeoutsKeys,
		fastcgiHealthKeys,
		intKey("retries", 0, maxProxyRetries, "1", "Further servers tried for a request whose connect failed; a request without a body sent on a pooled connection the server had just closed is sent again on a fresh one."),
		listKey("trusted_proxies", &keySpec{typ: typeString, doc: "An address or CIDR."}, "Clients whose X-Forwarded-For gives REMOTE_ADDR (its last address that is not a trusted proxy).").distinct(),
	}
}

var fastcgiKeys = sectionKey("fastcgi", "Send requests to a FastCGI application (PHP-FPM and others).",
	append(fastcgiCommon(),
		listKey("split_path", &keySpec{typ: typeString, doc: `An extension such as ".php".`}, `The path is split after the first of these that ends a segment (ASCII case-insensitive): the script, then PATH_INFO ("/index.php/a/b" runs "/index.php" with PATH_INFO "/a/b"); [] = the whole path is the script.`).withDefault(`[".php"]`),
		strKey("index", `The script of a path that ends in "/"; default "index.php".`),
	)...,
)

var phpKeys = sectionKey("php", "Serve a PHP application through PHP-FPM as Caddy's php_fastcgi does: .php files (and the front controller /index.php) run, other files are served as static files.",
	fastcgiCommon()...,
)

// queryNamePattern is what a query matcher's parameter names look like.
const queryNamePattern = "^[!$'()*+,.:;?@/~0-9A-Za-z_%-]+$"

// cidrList is one CIDR or address, or a list of them.
var cidrList = oneOrList("", &keySpec{typ: typeString, doc: `A CIDR ("10.0.0.0/8") or an address ("::1").`}, "")

var matchKeys = sectionKey("match", "Request matchers beside host and path; the route takes a request only when all of them hold.",
	listKey("methods", &keySpec{typ: typeString, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", doc: "A method, e.g. GET."}, "Request methods, e.g. [GET, POST] (upper-cased); GET also matches HEAD.").atLeast(1),
	strKey("path", `An exact normal path under the route's path ("/health" on path "/"); such routes are tried before every prefix.`),
	strKey("path_regex", "An RE2 regular expression (linear time) matched against the whole normal path (anchored at both ends); its groups, numbered and named ((?P<id>...)), are usable as {1}, {id} in rewrite, redirect.to and static.try_files. Not with match.path."),
	mapKeyOf("headers", headerNamePattern, oneOrList("", strKey("", `A value, or "*" for any value (the field is present).`), ""), "Header name -> value(s), compared exactly against the first field of that name."),
	mapKeyOf("query", queryNamePattern, oneOrList("", strKey("", `A value, or "*" for any value (the parameter is present).`), ""), `Query parameter -> value(s), compared decoded ("%XX", "+" as a space) against the first parameter of that name.`),
	listKey("remote", &keySpec{typ: typeString, doc: "A CIDR or an address."}, "Client address ranges (an IPv4-mapped IPv6 address counts as IPv4).").atLeast(1).distinct(),
)

// certMatchKeys are the keys of an access rule's client_cert mapping.
var certMatchKeys = sectionKey("", "A verified client certificate that matches every list given.",
	oneOrList("names", strKey("", "A name."), "The subject's common name or a subject alternative name (DNS, email, URI or IP) is one of these."),
	oneOrList("fingerprints", strKey("", "A SHA-256 fingerprint: 64 hex digits, or 32 pairs separated by colons."), "The certificate's SHA-256 fingerprint is one of these."),
)

var accessRuleKeys = func() *keySpec {
	r := sectionKey("", "An access rule.",
		anyOf("allow", `Allow clients in these CIDRs, or "all".`, cidrList.alts...),
		anyOf("deny", `Deny clients in these CIDRs, or "all".`, cidrList.alts...),
		anyOf("client_cert", `The rule matches only a client whose TLS certificate verified against its listener's client_auth CA ("verified"), and matches names and fingerprints when given.`,
			enumKey("", []string{"verified"}, "", "Any certificate that verified."), certMatchKeys),
	)
	r.oneOf = []string{"allow", "deny"}
	return r
}()

var rateLimitKeys = sectionKey("rate_limit", "Requests per key (GCRA): burst+1 at once, then one per 1/rate; over it 429 with Retry-After.",
	strKey("rate", `"N/s", "N/m" or "N/h"; at most a million a second.`).must(),
	intKey("burst", 0, maxRateBurst, "0", "Requests allowed at once beyond the rate (nginx's burst with nodelay)."),
	&keySpec{name: "header", typ: typeString, pattern: headerNamePattern, doc: "Key by this header's value (e.g. X-Api-Key) instead of the client address; a request without it is keyed by its address, so leaving it out escapes nothing."},
	intKey("ipv6_prefix", 1, 128, "64", "IPv6 clients are keyed by this prefix, so one host cannot take a fresh limit per address of its /64."),
	intKey("max_keys", minRateKeys, maxRateKeys, "65536", "Keys remembered at once; the table's memory (16 bytes a key) is allocated at load and never grows."),
	enumKey("scope", rateScopeOptions, "local", "local: each instance counts its own requests; cluster: the limit holds over every instance sharing cluster.redis (GCRA in Redis, spent locally from leases of a few tokens, so a request never waits on Redis; see README, Running several instances, for the error bound)."),
	enumKey("on_store_failure", storeFailureOptions, "local", "With scope cluster, while Redis is unreachable: local applies rate/N on each instance (N = cluster.instances, or the instances last seen); allow lets every request pass; deny answers 429. Each change is logged once and counted (gale_ratelimit_store_fallbacks_total); the cluster limit returns by itself."),
)

// Rate limit scopes and store failure modes.
var (
	rateScopeOptions    = []string{"local", "cluster"}
	storeFailureOptions = []string{"local", "allow", "deny"}
)

// routeNamePattern is what a route's name must match.
const routeNamePattern = `^[A-Za-z0-9_.-]{1,64}$`

var routeKeys = func() *keySpec {
	r := sectionKey("", "A route: a host and path prefix and what answers them.",
		&keySpec{name: "name", typ: typeString, pattern: routeNamePattern, doc: `The route's label in metrics (route="api"): 1 to 64 letters, digits, "_", ".", "-", unique, not all digits; absent = its index in the file ("0", "1", ...).`},
		strKey("host", `Host pattern: "example.com", "*.example.com" or an IP address; absent = any host.`),
		strKey("path", `Path prefix: "/a/" matches its subtree, "/a" matches "/a" and "/a/..." but not "/ab". It starts with "/" and is in normal form: no "//", "." or ".." segments, no escapes of unreserved characters, upper-case hex digits.`).must(),
		matchKeys,
		strKey("rewrite", `A "/path?query" template applied before the handler; without "?" the query is kept. Not with proxy.strip_prefix or proxy.rewrite.`),
		listKey("access", accessRuleKeys, "Ordered allow/deny rules: the first containing the client decides; none denies (403).").atLeast(1),
		rateLimitKeys,
		basicAuthKeys,
		forwardAuthKeys,
		proxyCacheKeys,
		headersKeys,
		staticKeys,
		proxyKeys,
		fastcgiKeys,
		phpKeys,
		respondKeys,
		redirectKeys,
		enumKey("encoded_slashes", encodedSlashOptions, "", encodedSlashesDoc+" Absent = server.encoded_slashes."),
		enumKey("health", healthKinds, "", `A health endpoint for probes: "live" answers 200 while the process runs; "ready" answers 200, and 503 from the moment a graceful stop begins.`),
	)
	r.oneOf = handlerKinds
	return r
}()

// topKeys is the table of the whole file.
var topKeys = sectionKey("", "gale's config file.",
	oneOrList("listen", addressSpec, `Addresses to accept connections on: "host:port" or {address, tls, redirect_to_https, protocols, http3, proxy_protocol, deny, max_conns_per_address}.`).must(),
	serverKeys,
	cacheKeys,
	mapKeyOf("mime_types", `^\.[^./\\]+$`, strKey("", "A media type."), `Extension (".webmanifest") -> media type, added to (and overriding) the built-in table, e.g. {".webmanifest": application/manifest+json}.`),
	logKeys,
	accessLogKeys,
	metricsKeys,
	adminKeys,
	clusterKeys,
	&keySpec{name: "pid_file", typ: typeString, def: `""`, doc: `A file gale writes its process ID to while it runs ("gale reload" sends SIGHUP to it when there is no admin API); "" = none.`},
	listKey("routes", routeKeys, "Routes, each a host and path prefix; their order carries no meaning for matching.").must().atLeast(1),
)
