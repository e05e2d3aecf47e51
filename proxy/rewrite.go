package proxy

import (
	"bytes"
	"net/netip"

	"gale/clientcert"
	"gale/codec"
	"gale/handlers"
)

// This file rewrites heads on their way through: the request into the
// upstream's head (rendered once, in Serve, while the request's bytes are
// valid), and response heads into the client's. Names and rules follow
// RFC 9110 section 7.6.1 and net/http/httputil's ReverseProxy: hop-by-hop
// fields, and every field Connection names, are removed before anything
// else looks at the header list.
//
// Framing is gale's own, in both directions: Content-Length,
// Transfer-Encoding and Host are never copied from the message being
// relayed, nor dropped because its Connection field names them (RFC 9110
// section 7.6.1 lets a sender list any field there, and "Connection:
// Content-Length" once made the upstream read a request body as the next
// request). They are rendered from the parsed head, which is what gale
// itself frames the body by, so the next hop cannot read the message
// differently. Header rules cannot name them (config rejects it).

// Header names the proxy renders. Static memory: never modified.
var (
	hdrHost   = []byte("Host")
	hdrXFF    = []byte("X-Forwarded-For")
	hdrXFP    = []byte("X-Forwarded-Proto")
	hdrXFH    = []byte("X-Forwarded-Host")
	hdrRealIP = []byte("X-Real-IP")
	hdrVia    = []byte("Via")

	hdrClientCert      = []byte("Client-Cert")
	hdrClientCertChain = []byte("Client-Cert-Chain")
	valVia11           = []byte("1.1 gale")
	valVia10           = []byte("1.0 gale")
	valHTTP            = []byte("http")
	valHTTPS           = []byte("https")
	crlf               = "\r\n"
	valUpLine          = "Connection: Upgrade\r\nUpgrade: "
)

// framingField reports whether a field is one gale renders itself from
// the parsed head: Content-Length here (Transfer-Encoding is hop-by-hop,
// Host is handled apart).
func framingField(name []byte) bool {
	return len(name) == 14 && codec.EqualFold(name, "content-length")
}

// hopByHop reports whether a field is hop-by-hop: the fields of RFC 9110
// section 7.6.1 and those net/http/httputil removes for the same reason
// (Proxy-Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
// Proxy-Authenticate, Proxy-Authorization), and HTTP2-Settings, which
// RFC 9113 section 3.2.1 makes connection-specific.
func hopByHop(name []byte) bool {
	switch len(name) {
	case 2:
		return codec.EqualFold(name, "te")
	case 7:
		return codec.EqualFold(name, "upgrade") || codec.EqualFold(name, "trailer")
	case 10:
		return codec.EqualFold(name, "connection") || codec.EqualFold(name, "keep-alive")
	case 14:
		return codec.EqualFold(name, "http2-settings") // only an h2c upgrade uses it (upgrade.go)
	case 16:
		return codec.EqualFold(name, "proxy-connection")
	case 17:
		return codec.EqualFold(name, "transfer-encoding")
	case 18:
		return codec.EqualFold(name, "proxy-authenticate")
	case 19:
		return codec.EqualFold(name, "proxy-authorization")
	}
	return false
}

// namedIn reports whether name is one of the comma-separated tokens of
// the Connection field values in conns.
func namedIn(conns [][]byte, name []byte) bool {
	for _, v := range conns {
		for len(v) > 0 {
			i := 0
			for i < len(v) && v[i] != ',' {
				i++
			}
			tok := codec.TrimOWS(v[:i])
			if codec.EqualFoldBytes(tok, name) {
				return true
			}
			if i == len(v) {
				break
			}
			v = v[i+1:]
		}
	}
	return false
}

// connectionValues collects the values of the Connection fields of hs.
func connectionValues(dst [][]byte, hs []codec.Header) [][]byte {
	for i := range hs {
		if codec.EqualFold(hs[i].Name, "connection") {
			dst = append(dst, hs[i].Value)
		}
	}
	return dst
}

// Kinds of forwarding field: what earlier hops say about the client and
// the request as they received it. From a trusted proxy they are kept;
// from anyone else they are dropped, since an application behind gale
// trusts them for identity (the client's address) and routing (the
// original URL, scheme, host or port).
const (
	fwdNone      uint8 = iota
	fwdFor             // X-Forwarded-For: combined with the client's address
	fwdProto           // X-Forwarded-Proto: set by gale unless a trusted proxy sent one
	fwdHost            // X-Forwarded-Host: likewise
	fwdRealIP          // X-Real-IP: likewise, the client's address
	fwdForwarded       // Forwarded (RFC 7239)
	fwdOther           // the others applications read the same way: kept only from trusted proxies
)

// forwardingField returns the kind of a forwarding field, by name.
// fwdOther names the fields that frameworks and CDNs use for the client's
// address (True-Client-IP, X-Client-IP, X-Cluster-Client-IP,
// CF-Connecting-IP, Fastly-Client-IP) and for the request as an earlier
// hop saw it (X-Original-URL and X-Rewrite-URL, which some frameworks
// route by; X-Forwarded-Port, -Server, -Prefix, -Scheme and -Ssl;
// Front-End-Https; X-Url-Scheme).
func forwardingField(name []byte) uint8 {
	switch len(name) {
	case 9:
		switch {
		case codec.EqualFold(name, "forwarded"):
			return fwdForwarded
		case codec.EqualFold(name, "x-real-ip"):
			return fwdRealIP
		}
	case 11:
		if codec.EqualFold(name, "x-client-ip") {
			return fwdOther
		}
	case 12:
		if codec.EqualFold(name, "x-url-scheme") {
			return fwdOther
		}
	case 13:
		if codec.EqualFold(name, "x-rewrite-url") {
			return fwdOther
		}
	case 14:
		if codec.EqualFold(name, "true-client-ip") || codec.EqualFold(name, "x-original-url") {
			return fwdOther
		}
	case 15:
		switch {
		case codec.EqualFold(name, "x-forwarded-for"):
			return fwdFor
		case codec.EqualFold(name, "x-forwarded-ssl") || codec.EqualFold(name, "front-end-https"):
			return fwdOther
		}
	case 16:
		switch {
		case codec.EqualFold(name, "x-forwarded-host"):
			return fwdHost
		case codec.EqualFold(name, "x-forwarded-port") || codec.EqualFold(name, "cf-connecting-ip") ||
			codec.EqualFold(name, "fastly-client-ip"):
			return fwdOther
		}
	case 17:
		if codec.EqualFold(name, "x-forwarded-proto") {
			return fwdProto
		}
	case 18:
		if codec.EqualFold(name, "x-forwarded-server") || codec.EqualFold(name, "x-forwarded-prefix") ||
			codec.EqualFold(name, "x-forwarded-scheme") {
			return fwdOther
		}
	case 19:
		if codec.EqualFold(name, "x-cluster-client-ip") {
			return fwdOther
		}
	}
	return fwdNone
}

// appendPath appends the upstream's path for a normalised request path p:
// p itself, or the route's prefix replaced by rewrite (rewrite joined to the rest of
// the path with exactly one "/" between them; never empty).
func appendPath(dst, rewrite, rest []byte) []byte {
	switch {
	case len(rest) == 0:
		return append(dst, rewrite...)
	case rewrite[len(rewrite)-1] == '/' && rest[0] == '/':
		return append(append(dst, rewrite...), rest[1:]...)
	case rewrite[len(rewrite)-1] != '/' && rest[0] != '/':
		dst = append(append(dst, rewrite...), '/')
		return append(dst, rest...)
	}
	return append(append(dst, rewrite...), rest...)
}

// renderRequest renders the upstream request head of c.Req into ex.head:
// the request line, then the header lines that follow Host, then the
// framing fields and the empty line. Host is added when the head is sent,
// since it names the upstream chosen then (unless preserve_host or a
// header rule sets it). Order of work: the client's end-to-end fields
// (endToEndFields: hop-by-hop fields, those Connection names and the
// fields gale renders itself go first); then the forwarding fields and
// Via (appendForwarding); then the route's request rules; then the
// framing gale parsed. The head is rendered while c.Req's bytes are
// valid, so the exchange keeps nothing that aliases them.
func (ex *exchange) renderRequest(c *handlers.Ctx) {
	h, lp, req := ex.h, ex.lp, c.Req
	b := ex.appendRequestLine(ex.head[:0], c)
	ex.lineEnd = len(b)

	// The forwarding fields the connection's peer sent are kept when it
	// is a trusted proxy, the route's or the server's.
	hs, seen := ex.endToEndFields(lp.hdrs[:0], req, h.isTrusted(ex.peer) || ex.peerTrusted)
	hs = ex.appendForwarding(hs, c, seen)

	// The route's request rules, last.
	lp.req.Headers = hs
	h.route.ApplyRequestHeaders(&lp.req)
	hs = lp.req.Headers
	lp.req.Headers = nil

	ex.ruleHost = false
	for _, f := range hs {
		if len(f.Name) == 4 && codec.EqualFold(f.Name, "host") {
			ex.ruleHost = true
		}
	}
	b = codec.AppendFieldLines(b, hs)
	clear(hs)
	lp.hdrs = hs[:0]
	b = appendRequestFraming(b, req)
	if ex.upgrade {
		b = append(b, valUpLine...)
		ex.upFrom = len(b)
		b = h.appendUpgrades(b, req.Headers)
		ex.upTo = len(b)
		b = append(b, crlf...)
	}
	b = append(b, crlf...)
	ex.head = b
	ex.host = ex.host[:0]
	if h.conf.PreserveHost && len(req.Host) > 0 {
		ex.host = append(ex.host, req.Host...)
	}
}

// appendRequestLine appends the upstream's request line: the method, the
// normal path in its wire form (with the client's encoded slashes and
// path parameters; its route prefix rewritten when the route says so),
// the query as sent, and always HTTP/1.1.
func (ex *exchange) appendRequestLine(b []byte, c *handlers.Ctx) []byte {
	h, req := ex.h, c.Req
	b = append(b, req.Method...)
	b = append(b, ' ')
	path := c.Path
	if c.WirePath != nil {
		path = c.WirePath
	}
	if h.rewrite != nil && len(c.Path) >= h.prefix {
		at := h.prefix
		if c.WirePath != nil {
			at = handlers.WireOffset(path, h.prefix)
		}
		b = appendPath(b, h.rewrite, path[at:])
	} else {
		b = append(b, path...)
	}
	if req.Query != nil {
		b = append(b, '?')
		b = append(b, req.Query...)
	}
	return append(b, " HTTP/1.1\r\n"...)
}

// fwdSeen is what endToEndFields found of the forwarding fields a trusted
// proxy sent, for appendForwarding.
type fwdSeen struct {
	xffLen              int // bytes of X-Forwarded-For values, with a ", " each
	proto, host, realIP bool
}

// endToEndFields appends to hs the client's fields that go upstream as
// they are, and returns what it saw of the forwarding fields. Dropped: hop-by-hop fields and
// those Connection names, the framing fields and Host (gale renders
// them), names with an underscore, and forwarding fields from a client
// that is not a trusted proxy. X-Forwarded-For is left to
// appendForwarding, which combines it. It also notes whether the client
// asks for JSON only (for gale's own error bodies).
func (ex *exchange) endToEndFields(hs []codec.Header, req *codec.Request, trusted bool) ([]codec.Header, fwdSeen) {
	lp := ex.lp
	lp.conns = connectionValues(lp.conns[:0], req.Headers)
	var seen fwdSeen
	for _, f := range req.Headers {
		name := f.Name
		if hopByHop(name) {
			continue // Upgrade: renderRequest forwards what the route allows of it (upgrade.go)
		}
		if framingField(name) {
			continue // rendered by appendRequestFraming from the parsed head
		}
		if bytes.IndexByte(name, '_') >= 0 {
			// CGI, PHP-FPM, WSGI and Rack map "_" and "-" to the same
			// variable, so "X_Real_IP" would pass for "X-Real-IP" behind
			// the checks below. Dropped, as nginx's default
			// underscores_in_headers off does.
			continue
		}
		if len(lp.conns) > 0 && namedIn(lp.conns, name) {
			continue
		}
		if clientCertField(name) {
			continue // gale's own, from the TLS handshake (appendClientCert)
		}
		if len(name) == 13 && codec.EqualFold(name, "authorization") && ex.h.route.StripsAuthorization() {
			continue // basic_auth's credentials stop at gale
		}
		switch len(name) {
		case 4:
			if codec.EqualFold(name, "host") {
				continue // ours goes first, when sent
			}
		case 6:
			if codec.EqualFold(name, "accept") {
				ex.json = codec.AcceptsJSONOnly(f.Value)
			}
		}
		kind := forwardingField(name)
		if kind == fwdNone {
			hs = append(hs, f)
			continue
		}
		if !trusted {
			continue
		}
		switch kind {
		case fwdFor:
			seen.xffLen += len(f.Value) + 2
			continue // combined by appendForwarding
		case fwdProto:
			seen.proto = true
		case fwdHost:
			seen.host = true
		case fwdRealIP:
			seen.realIP = true
		}
		hs = append(hs, f)
	}
	return hs, seen
}

// appendForwarding appends the fields gale adds as a gateway:
// X-Forwarded-For (a trusted proxy's list, then the client's address),
// X-Real-IP, X-Forwarded-Proto and X-Forwarded-Host unless a trusted proxy
// sent them, and Via.
func (ex *exchange) appendForwarding(hs []codec.Header, c *handlers.Ctx, seen fwdSeen) []codec.Header {
	h, lp, req := ex.h, ex.lp, c.Req
	// vbuf gets its capacity first so the values do not move.
	if need := seen.xffLen + 128; cap(lp.vbuf) < need {
		lp.vbuf = make([]byte, 0, 2*need)
	}
	v := lp.vbuf[:0]
	if seen.xffLen > 0 {
		for _, f := range req.Headers {
			if forwardingField(f.Name) == fwdFor && len(f.Value) > 0 {
				v = append(v, f.Value...)
				v = append(v, ", "...)
			}
		}
		if h.policy.Hashing() {
			ex.clientIP = h.forwardedClient(v, ex.ip)
		}
	}
	// The hop that connected to gale goes last, as every hop adds its
	// own: the client itself, or the trusted proxy in front.
	if ex.peer.IsValid() {
		v = ex.peer.AppendTo(v)
	} else if len(v) >= 2 {
		v = v[:len(v)-2]
	}
	if len(v) > 0 {
		hs = append(hs, codec.Header{Name: hdrXFF, Value: v[:len(v):len(v)]})
	}
	if !seen.realIP && ex.ip.IsValid() {
		v = ex.ip.AppendTo(v[len(v):])
		hs = append(hs, codec.Header{Name: hdrRealIP, Value: v[:len(v):len(v)]})
	}
	if !seen.proto {
		proto := valHTTP
		if c.TLS {
			proto = valHTTPS
		}
		hs = append(hs, codec.Header{Name: hdrXFP, Value: proto})
	}
	if !seen.host && len(req.Host) > 0 {
		hs = append(hs, codec.Header{Name: hdrXFH, Value: req.Host})
	}
	hs = appendClientCert(hs, c)
	// A gateway adds itself to Via, after the hops the request already
	// went through (RFC 9110 section 7.6.3).
	if req.Version == codec.HTTP10 {
		return append(hs, codec.Header{Name: hdrVia, Value: valVia10})
	}
	return append(hs, codec.Header{Name: hdrVia, Value: valVia11})
}

// clientCertField reports whether a field is one of RFC 9440's, which
// only gale sets: whatever a client sends under these names is dropped,
// whoever it is.
func clientCertField(name []byte) bool {
	switch len(name) {
	case 11:
		return codec.EqualFold(name, "client-cert")
	case 17:
		return codec.EqualFold(name, "client-cert-chain")
	}
	return false
}

// appendClientCert appends Client-Cert and, when the client sent
// intermediates, Client-Cert-Chain (RFC 9440): the certificate the TLS
// client presented, when it verified against its listener's client_auth
// CA. A certificate that did not verify (client_auth mode request) is
// not forwarded: an upstream would have no way to tell.
func appendClientCert(hs []codec.Header, c *handlers.Ctx) []codec.Header {
	in := c.Cert
	if in == nil || in.Verify != clientcert.Success {
		return hs
	}
	hs = append(hs, codec.Header{Name: hdrClientCert, Value: in.Field})
	if len(in.ChainField) > 0 {
		hs = append(hs, codec.Header{Name: hdrClientCertChain, Value: in.ChainField})
	}
	return hs
}

// appendRequestFraming renders the framing of the request body as gale
// forwards it: chunked when the client's body is chunked (gale re-frames
// it, see pumpBody), else the Content-Length the parser accepted, when
// the client sent one.
func appendRequestFraming(b []byte, req *codec.Request) []byte {
	switch {
	case req.LengthUnknown():
		return append(b, "Transfer-Encoding: chunked\r\n"...)
	case req.ContentLength >= 0:
		return codec.AppendContentLength(b, req.ContentLength)
	}
	return b
}

// forwardedClient returns the client address that trusted proxies report
// in an X-Forwarded-For list ("a, b, c, "): the rightmost address that is
// not itself a trusted proxy, or def when the list says nothing usable.
// It runs only for client-ip-hash balancing behind trusted proxies.
func (h *Handler) forwardedClient(list []byte, def netip.Addr) netip.Addr {
	for len(list) > 0 {
		i := len(list) - 1
		for i >= 0 && list[i] != ',' {
			i--
		}
		elem := codec.TrimOWS(list[i+1:])
		list = list[:max(i, 0)]
		if len(elem) == 0 {
			continue
		}
		a, err := netip.ParseAddr(string(elem))
		if err != nil {
			return def
		}
		if !h.isTrusted(a) {
			return a.Unmap()
		}
		def = a.Unmap()
	}
	return def
}

// filterResponse puts the end-to-end fields of the parsed response head
// into lp.hdrs, applies the route's response rules when rules is set, and
// returns the list. Trailer goes with the other hop-by-hop fields: the
// sink frames the body again, and the upstream's trailer fields are not
// relayed.
func (ex *exchange) filterResponse(rules bool) []codec.Header {
	lp, r := ex.lp, &ex.resp
	lp.conns = connectionValues(lp.conns[:0], r.Headers)
	hs := lp.hdrs[:0]
	for _, f := range r.Headers {
		name := f.Name
		if hopByHop(name) || framingField(name) {
			continue // the sink renders the framing from the length relayHead gives
		}
		if len(lp.conns) > 0 && namedIn(lp.conns, name) {
			continue
		}
		hs = append(hs, f)
	}
	if rules {
		// The rules edit hs through the loop's scratch response, which
		// then gets its own storage back: left aliasing lp.hdrs, an
		// error head built in it later (finishError) would be
		// overwritten by the fields put before it in lp.hdrs.
		own := lp.resp.Headers[:0]
		lp.resp.Headers = hs
		ex.h.route.ApplyResponseHeaders(&lp.resp)
		hs = lp.resp.Headers
		lp.resp.Headers = own
	}
	return hs
}

// relayInterim hands a 1xx response (but 101) to the sink, which drops it
// for clients that cannot take one.
func (ex *exchange) relayInterim() {
	hs := ex.filterResponse(false)
	ex.sink.WriteInterim(ex.resp.Status, hs)
	clear(hs)
	ex.lp.hdrs = hs[:0]
}

// relayHead relays a final (or 101) response head: it decides how the
// upstream's body is read and whether the client connection may stay
// open, and hands the status, the end-to-end fields and the body's length
// to the sink, which renders the framing. The length is the upstream's
// Content-Length as parsed (for a response without a body, a response to
// HEAD or a 304, the representation's: RFC 9110 section 8.6), or -1 for a
// chunked or close-delimited body.
func (ex *exchange) relayHead() {
	r := &ex.resp
	lp := ex.lp
	ex.status = r.Status
	ex.started = true
	if r.Status == 101 {
		ex.kind = codec.BodyNone
		hs := ex.filterResponse(true)
		ex.cl.(handlers.Upgrader).SwitchProtocols(hs, r.Header("upgrade")) // ex.upgrade: the client can tunnel (setup)
		clear(hs)
		lp.hdrs = hs[:0]
		return
	}
	ex.kind = ex.rbody.InitResponse(r, ex.isHead)
	if ex.kind == codec.BodyChunked && ex.bodyCount == nil {
		// A client on a shared connection (HTTP/2, HTTP/3) gets the
		// trailer fields of a chunked response (relayBody).
		ex.trailerRaw = ex.trailerRaw[:0]
		ex.rbody.Keep = &ex.trailerRaw
	}
	ex.remaining = r.ContentLength
	ex.closeClient = !ex.reqDone || ex.kind == codec.BodyUntilClose || ex.cl.Closing()
	length := r.ContentLength
	if ex.kind == codec.BodyChunked || ex.kind == codec.BodyUntilClose {
		length = -1
	}
	hs := ex.filterResponse(true)
	ex.sink.WriteHead(handlers.Head{Status: r.Status, Reason: r.Reason, Fields: hs, Length: length, Close: ex.closeClient})
	clear(hs)
	lp.hdrs = hs[:0]
}

// relayedTrailers appends to dst the trailer fields of a chunked
// response's section that may go on (relayableTrailer).
func relayedTrailers(dst []codec.Header, section []byte) []codec.Header {
	start := len(dst)
	dst = codec.ParseTrailers(section, dst)
	kept := dst[:start]
	for _, f := range dst[start:] {
		if relayableTrailer(f.Name) {
			kept = append(kept, f)
		}
	}
	clear(dst[len(kept):])
	return kept
}

// relayableTrailer reports whether a trailer field may be relayed, in
// either direction and whatever protocol carried it: not a
// connection-specific one, nor one that would say something about
// framing, routing, authentication or the message's content (RFC 9110
// section 6.5.1), which the checks made on the head never saw.
func relayableTrailer(name []byte) bool {
	return !codec.ConnectionSpecific(name) && !framingField(name) && !trailerForbidden(name)
}

// trailerForbiddenNames are the fields relayableTrailer keeps out of
// trailer sections besides the connection-specific and framing ones.
var trailerForbiddenNames = [...]string{
	"host", "trailer", "content-type", "content-encoding", "content-range",
	"authorization", "set-cookie", "cache-control", "expires", "date",
	"location", "retry-after", "vary", "www-authenticate",
}

// trailerForbidden reports whether name is one of trailerForbiddenNames.
func trailerForbidden(name []byte) bool {
	for _, n := range trailerForbiddenNames {
		if codec.EqualFold(name, n) {
			return true
		}
	}
	return false
}
