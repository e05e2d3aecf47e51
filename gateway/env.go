package gateway

import (
	"net/netip"
	"strconv"

	"gale/codec"
	"gale/fastcgi"
	"gale/handlers"
)

// The CGI/1.1 environment (RFC 3875 section 4.1), as nginx's
// fastcgi_params and Caddy's FastCGI transport set it:
//
//	SCRIPT_FILENAME  root + SCRIPT_NAME
//	SCRIPT_NAME      the script's path, decoded
//	PATH_INFO        the path after the script, decoded ("" when none)
//	PATH_TRANSLATED  root + PATH_INFO (only with a PATH_INFO)
//	DOCUMENT_ROOT    the route's root
//	DOCUMENT_URI     the request's normal path, decoded (nginx's $uri)
//	REQUEST_URI      the request-target as the client sent it (absolute-form: its path and query)
//	QUERY_STRING     the query without "?", as sent ("" when none)
//	REQUEST_METHOD, SERVER_PROTOCOL ("HTTP/1.1", "HTTP/2.0" or "HTTP/3.0"), GATEWAY_INTERFACE ("CGI/1.1"), SERVER_SOFTWARE ("gale")
//	CONTENT_TYPE, CONTENT_LENGTH (both "" when the request has none)
//	REMOTE_ADDR, REMOTE_PORT  the client (X-Forwarded-For's last untrusted hop when the peer is a trusted proxy)
//	SERVER_NAME, SERVER_PORT  Host's name and port (the scheme's port when Host has none), as Caddy does
//	REQUEST_SCHEME ("http" or "https"); HTTPS "on" over TLS
//	HTTP_*           every request field but Content-Type and Content-Length, its name upper-cased with "-" as "_"; repeated fields joined with ", " (Cookie with "; ")
//	env              the route's own variables, last
//
// Never HTTP_PROXY: a client's "Proxy" field would become the proxy that
// CGI programs' HTTP libraries use (httpoxy, CVE-2016-5385). Fields whose
// names hold "_" are dropped too, so that "X_Real_IP" cannot pose as
// "X-Real-IP" (nginx's underscores_in_headers off).
//
// The script is found by splitting the normal path after the first
// split_path extension (ASCII case-insensitive) that ends a segment:
// "/index.php/a/b" is the script "/index.php" and PATH_INFO "/a/b". The
// split is made in code on the whole path, never by a regular expression
// that a newline in the path could stop short (CVE-2019-11043: nginx's
// "^(.+\.php)(/.+)$" did not match "/index.php/a%0Ab", left PATH_INFO
// empty, and PHP-FPM's pointer arithmetic on it went out of bounds); a
// PATH_INFO with any byte, a newline included, is passed as it is, and
// always a suffix of DOCUMENT_URI.

// splitPath splits the normal path p into the script and PATH_INFO. A
// path with no split point is the script; one ending in "/" is the
// directory's index script (returned in static memory of the handler's
// plus p: the caller appends it).
func (h *Handler) splitPath(p []byte) (script, info []byte) {
	for i := 1; i < len(p); i++ {
		if p[i] != '.' {
			continue
		}
		for _, ext := range h.split {
			end := i + len(ext)
			if end <= len(p) && codec.EqualFoldBytes(p[i:end], ext) && (end == len(p) || p[end] == '/') && p[i-1] != '/' {
				return p[:end:end], p[end:]
			}
		}
	}
	return p, nil
}

// appendFixed appends the pairs every request of the route carries.
func (h *Handler) appendFixed(b []byte) []byte {
	b = fastcgi.AppendPairString(b, "DOCUMENT_ROOT", h.root)
	b = fastcgi.AppendPairString(b, "GATEWAY_INTERFACE", valCGI)
	b = fastcgi.AppendPairString(b, "SERVER_SOFTWARE", valSoftware)
	for _, e := range h.conf.Env {
		b = fastcgi.AppendPair(b, []byte(e.Name), []byte(e.Value))
	}
	return b
}

// envScratch is the memory one environment is built with.
type envScratch struct {
	name []byte // an HTTP_* name, or a decoded path
	val  []byte // a joined field value
	num  [24]byte
}

// appendEnv appends the request's pairs to b. script and info are parts
// of the normal path (script may be c.Path plus the index, in
// c.Scratch), or with decoded set clean decoded paths (the php preset's).
// It returns 0, or the status to answer instead: 404 for a script whose
// path holds an encoded "/" or NUL, 400 for a NUL in PATH_INFO.
func (h *Handler) appendEnv(b []byte, c *handlers.Ctx, sc *envScratch, script, info []byte, decoded bool) ([]byte, int) {
	req := c.Req
	b = append(b, h.fixed...)
	sc.name = appendPath(sc.name[:0], script, decoded)
	if hasByte(sc.name, 0) || !decoded && len(sc.name) != countDecoded(script) {
		return b, 404
	}
	b = appendPairJoin(b, "SCRIPT_FILENAME", h.root, sc.name)
	b = fastcgi.AppendPairString(b, "SCRIPT_NAME", sc.name)
	sn := len(sc.name)
	sc.name = appendPath(sc.name, info, decoded)
	pathInfo := sc.name[sn:]
	if hasByte(pathInfo, 0) {
		return b, 400
	}
	b = fastcgi.AppendPairString(b, "PATH_INFO", pathInfo)
	if len(pathInfo) > 0 {
		b = appendPairJoin(b, "PATH_TRANSLATED", h.root, pathInfo)
	}
	if decoded || string(c.Path) == string(script)+string(info) {
		b = fastcgi.AppendPairString(b, "DOCUMENT_URI", sc.name) // script and info are the whole path
	} else {
		sc.name = appendUnescape(sc.name[:0], c.Path)
		b = fastcgi.AppendPairString(b, "DOCUMENT_URI", sc.name)
	}
	b = fastcgi.AppendPairString(b, "REQUEST_URI", requestURI(sc, req))
	b = fastcgi.AppendPairString(b, "QUERY_STRING", req.Query)
	b = fastcgi.AppendPairString(b, "REQUEST_METHOD", req.Method)
	b = fastcgi.AppendPairString(b, "SERVER_PROTOCOL", protocol(req.Version))
	b = fastcgi.AppendPairString(b, "CONTENT_TYPE", req.Header("Content-Type"))
	var clen []byte
	if req.HasBody() {
		clen = strconv.AppendInt(sc.num[:0], req.ContentLength, 10)
	}
	b = fastcgi.AppendPairString(b, "CONTENT_LENGTH", clen)
	b = h.appendRemote(b, c, sc)
	b = appendServer(b, c, sc)
	b = appendClientCert(b, c)
	return h.appendFields(b, req, sc), 0
}

// appendClientCert appends, over TLS, the client certificate variables
// nginx's $ssl_client_* give (and Apache's mod_ssl names): SSL_CLIENT_VERIFY
// (NONE, SUCCESS, or FAILED: and the reason) and, when the client
// presented a certificate, its subject and issuer (RFC 2253),
// serial (hex), SHA-256 fingerprint (hex) and PEM. The request's own
// fields arrive as HTTP_*, so a client cannot set these.
func appendClientCert(b []byte, c *handlers.Ctx) []byte {
	if !c.TLS {
		return b
	}
	in := c.Cert
	b = fastcgi.AppendPairStrings(b, "SSL_CLIENT_VERIFY", in.ResultOrNone())
	if in == nil {
		return b
	}
	b = fastcgi.AppendPairStrings(b, "SSL_CLIENT_S_DN", in.Subject)
	b = fastcgi.AppendPairStrings(b, "SSL_CLIENT_I_DN", in.Issuer)
	b = fastcgi.AppendPairStrings(b, "SSL_CLIENT_SERIAL", in.Serial)
	b = fastcgi.AppendPairStrings(b, "SSL_CLIENT_FINGERPRINT", in.Fingerprint)
	return fastcgi.AppendPairStrings(b, "SSL_CLIENT_CERT", in.PEM)
}

// requestURI is the request-target as sent, in origin form.
func requestURI(sc *envScratch, req *codec.Request) []byte {
	if req.Form == codec.OriginForm {
		return req.Target
	}
	sc.val = append(sc.val[:0], req.Path...)
	if req.Query != nil {
		sc.val = append(append(sc.val, '?'), req.Query...)
	}
	return sc.val
}

// Values of the environment, in static memory.
var (
	valHTTP10   = []byte("HTTP/1.0")
	valHTTP11   = []byte("HTTP/1.1")
	valHTTP20   = []byte("HTTP/2.0")
	valHTTP30   = []byte("HTTP/3.0")
	valHTTP     = []byte("http")
	valHTTPS    = []byte("https")
	valOn       = []byte("on")
	valPort80   = []byte("80")
	valPort443  = []byte("443")
	valCGI      = []byte("CGI/1.1")
	valSoftware = []byte("gale")
)

func protocol(v codec.Version) []byte {
	switch v {
	case codec.HTTP10:
		return valHTTP10
	case codec.HTTP20:
		return valHTTP20
	case codec.HTTP30:
		return valHTTP30
	}
	return valHTTP11
}

// appendRemote appends REMOTE_ADDR and REMOTE_PORT.
func (h *Handler) appendRemote(b []byte, c *handlers.Ctx, sc *envScratch) []byte {
	addr, port := handlers.ClientAddr(c), c.Remote.Port()
	if h.isTrusted(addr) {
		if a, ok := h.forwardedFor(c.Req); ok {
			addr, port = a, 0
		}
	}
	sc.val = addr.AppendTo(sc.val[:0])
	b = fastcgi.AppendPairString(b, "REMOTE_ADDR", sc.val)
	var p []byte
	if port != 0 {
		p = strconv.AppendUint(sc.num[:0], uint64(port), 10)
	}
	return fastcgi.AppendPairString(b, "REMOTE_PORT", p)
}

func (h *Handler) isTrusted(a netip.Addr) bool {
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the last address of the X-Forwarded-For fields
// that is not a trusted proxy.
func (h *Handler) forwardedFor(req *codec.Request) (netip.Addr, bool) {
	for i := len(req.Headers) - 1; i >= 0; i-- {
		f := req.Headers[i]
		if !codec.EqualFold(f.Name, "X-Forwarded-For") {
			continue
		}
		v := f.Value
		for len(v) > 0 {
			j := len(v) - 1
			for j >= 0 && v[j] != ',' {
				j--
			}
			a, err := netip.ParseAddr(string(codec.TrimOWS(v[j+1:])))
			if err != nil {
				return netip.Addr{}, false
			}
			if a = a.Unmap(); !h.isTrusted(a) {
				return a, true
			}
			v = v[:max(j, 0)]
		}
	}
	return netip.Addr{}, false
}

// appendServer appends SERVER_NAME, SERVER_PORT, REQUEST_SCHEME and, over
// TLS, HTTPS.
func appendServer(b []byte, c *handlers.Ctx, sc *envScratch) []byte {
	host := c.Req.Host
	name, port := host, []byte(nil)
	if i := lastColon(host); i >= 0 {
		name, port = host[:i], host[i+1:]
	}
	scheme := valHTTP
	if c.TLS {
		scheme = valHTTPS
	}
	if len(port) == 0 {
		port = valPort80
		if c.TLS {
			port = valPort443
		}
	}
	b = fastcgi.AppendPairString(b, "SERVER_NAME", name)
	b = fastcgi.AppendPairString(b, "SERVER_PORT", port)
	b = fastcgi.AppendPairString(b, "REQUEST_SCHEME", scheme)
	if c.TLS {
		b = fastcgi.AppendPairString(b, "HTTPS", valOn)
	}
	return b
}

// lastColon is the index of the colon before a port in a Host value
// (IPv6 literals in brackets), or -1.
func lastColon(h []byte) int {
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i] {
		case ':':
			return i
		case ']':
			return -1
		}
	}
	return -1
}

// clientCertField reports whether a field is one of RFC 9440's
// (Client-Cert, Client-Cert-Chain): an application that reads them
// behind a proxy must not find a client's own in HTTP_CLIENT_CERT;
// SSL_CLIENT_CERT carries the certificate gale verified.
func clientCertField(name []byte) bool {
	return len(name) == 11 && codec.EqualFold(name, "client-cert") ||
		len(name) == 17 && codec.EqualFold(name, "client-cert-chain")
}

// appendFields appends HTTP_* for the request's fields, but RFC 9440's
// (clientCertField).
func (h *Handler) appendFields(b []byte, req *codec.Request, sc *envScratch) []byte {
	hs := req.Headers
	strip := h.route.StripsAuthorization()
	for i := range hs {
		name := hs[i].Name
		if skipField(name) || seenBefore(hs, i) || strip && codec.EqualFold(name, "Authorization") || clientCertField(name) {
			continue
		}
		sc.name = append(sc.name[:0], "HTTP_"...)
		for _, ch := range name {
			switch {
			case ch == '-':
				ch = '_'
			case ch >= 'a' && ch <= 'z':
				ch -= 'a' - 'A'
			}
			sc.name = append(sc.name, ch)
		}
		v := hs[i].Value
		if more := hasLater(hs, i); more {
			sep := ", "
			if codec.EqualFold(name, "Cookie") {
				sep = "; "
			}
			sc.val = append(sc.val[:0], v...)
			for j := i + 1; j < len(hs); j++ {
				if codec.EqualFoldBytes(hs[j].Name, name) {
					sc.val = append(append(sc.val, sep...), hs[j].Value...)
				}
			}
			v = sc.val
		}
		b = fastcgi.AppendPair(b, sc.name, v)
	}
	return b
}

// skipField reports the fields that get no HTTP_* variable.
func skipField(name []byte) bool {
	return codec.EqualFold(name, "Proxy") || codec.EqualFold(name, "Content-Type") ||
		codec.EqualFold(name, "Content-Length") || hasByte(name, '_')
}

func seenBefore(hs []codec.Header, i int) bool {
	for j := 0; j < i; j++ {
		if codec.EqualFoldBytes(hs[j].Name, hs[i].Name) {
			return true
		}
	}
	return false
}

func hasLater(hs []codec.Header, i int) bool {
	for j := i + 1; j < len(hs); j++ {
		if codec.EqualFoldBytes(hs[j].Name, hs[i].Name) {
			return true
		}
	}
	return false
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// appendPairJoin appends the pair name = a + b.
func appendPairJoin(dst []byte, name string, a, b []byte) []byte {
	dst = appendLen(dst, len(name))
	dst = appendLen(dst, len(a)+len(b))
	dst = append(dst, name...)
	return append(append(dst, a...), b...)
}

func appendLen(dst []byte, n int) []byte {
	if n < 128 {
		return append(dst, byte(n))
	}
	return append(dst, byte(n>>24)|0x80, byte(n>>16), byte(n>>8), byte(n))
}

// appendPath appends p, decoded unless it is already.
func appendPath(dst, p []byte, decoded bool) []byte {
	if decoded {
		return append(dst, p...)
	}
	return appendUnescape(dst, p)
}

// appendUnescape appends p with its percent-escapes decoded (the codec
// has checked them).
func appendUnescape(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			dst = append(dst, unhex(p[i+1])<<4|unhex(p[i+2]))
			i += 2
			continue
		}
		dst = append(dst, p[i])
	}
	return dst
}

// countDecoded is how many bytes p decodes to, with an encoded "/"
// counted as two so that a script path holding one never matches its
// decoded length (appendEnv refuses it).
func countDecoded(p []byte) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if unhex(p[i+1])<<4|unhex(p[i+2]) == '/' {
				n++
			}
			i += 2
		}
		n++
	}
	return n
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}
