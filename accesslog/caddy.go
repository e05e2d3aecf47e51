package accesslog

import (
	"net/netip"
	"strconv"

	"gale/clientcert"
	"gale/codec"
)

// The JSON layout is Caddy's access log (its http.log.access entries), so
// that tools that read Caddy's logs read gale's: GoAccess's CADDY format
// takes ts, request.client_ip, request.proto, request.method,
// request.host, request.uri, request.headers (User-Agent, Referer),
// duration, size and status. request.headers holds every request field
// under its canonical name, values in arrays as Caddy writes them, except
// Host (request.host says it) and with the credentials (Authorization,
// Proxy-Authorization, Cookie) redacted, as Caddy does unless told to log
// them. Response fields are not logged (nor, so, Set-Cookie). A request
// whose TLS client presented a certificate has request.tls, describing
// it (appendClientCert).

// appendJSON appends rec's line in the JSON layout.
func appendJSON(dst []byte, remote netip.Addr, rec *Record, status int, bodyBytes, now int64) []byte {
	dst = append(dst, `{"level":"info","ts":`...)
	dst = appendSeconds(dst, now)
	dst = append(dst, `,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"`...)
	dst = remote.AppendTo(dst)
	dst = append(dst, `","client_ip":"`...)
	dst = remote.AppendTo(dst)
	dst = append(dst, `","proto":"`...)
	if len(rec.method) > 0 {
		dst = appendProto(dst, rec.version)
	}
	dst = append(dst, `","method":"`...)
	dst = appendEscaped(dst, rec.method, true)
	dst = append(dst, `","host":"`...)
	dst = appendEscaped(dst, rec.host, true)
	dst = append(dst, `","uri":"`...)
	dst = appendEscaped(dst, rec.target, true)
	dst = append(dst, `","headers":{`...)
	dst = appendHeaders(dst, rec.headers)
	dst = append(dst, '}')
	if rec.cert != nil {
		dst = appendClientCert(dst, rec.cert)
	}
	dst = append(dst, `},"bytes_read":`...)
	dst = strconv.AppendInt(dst, rec.bytesRead, 10)
	dst = append(dst, `,"duration":`...)
	dst = appendSeconds(dst, rec.duration)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, bodyBytes, 10)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	return append(dst, "}\n"...)
}

// appendClientCert appends the request's "tls" object with the client's
// certificate, under Caddy's names (client_common_name, client_serial)
// and gale's (client_subject, client_issuer, client_fingerprint: SHA-256,
// client_verify: SSL_CLIENT_VERIFY's value).
func appendClientCert(dst []byte, c *clientcert.Info) []byte {
	for i, f := range [...]struct{ name, value string }{
		{"client_common_name", c.CommonName}, {"client_serial", c.Serial},
		{"client_subject", c.Subject}, {"client_issuer", c.Issuer},
		{"client_fingerprint", c.Fingerprint}, {"client_verify", c.Result},
	} {
		if i == 0 {
			dst = append(dst, `,"tls":{"`...)
		} else {
			dst = append(dst, `,"`...)
		}
		dst = append(dst, f.name...)
		dst = append(dst, `":"`...)
		dst = appendEscapedString(dst, f.value)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// appendEscapedString is appendEscaped, JSON, for a string.
func appendEscapedString(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		dst = appendEscapedByte(dst, v[i], true)
	}
	return dst
}

// appendSeconds appends ns nanoseconds as seconds with a fraction of
// nine digits (trailing zeros kept: the field is a JSON number either
// way).
func appendSeconds(dst []byte, ns int64) []byte {
	if ns < 0 {
		ns = 0
	}
	dst = strconv.AppendInt(dst, ns/1e9, 10)
	frac := ns % 1e9
	dst = append(dst, '.')
	for d := int64(1e8); d >= 1; d /= 10 {
		dst = append(dst, byte('0'+frac/d%10))
	}
	return dst
}

// appendHeaders appends the request fields as a JSON object's members:
// each name once, canonical, with all its values in arrival order.
// Fields are few (their bytes are bounded by limits.header_bytes), so the
// earlier ones are searched for each rather than kept in a map.
func appendHeaders(dst []byte, hs []codec.Header) []byte {
	first := true
	for i, h := range hs {
		if equalFold(h.Name, "host") || seenBefore(hs[:i], h.Name) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = appendCanonical(dst, h.Name)
		dst = append(dst, `":[`...)
		redact := isCredential(h.Name)
		n := 0
		for _, v := range hs[i:] {
			if !equalFoldBytes(v.Name, h.Name) {
				continue
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = append(dst, '"')
			if redact {
				dst = append(dst, "REDACTED"...)
			} else {
				dst = appendEscaped(dst, v.Value, true)
			}
			dst = append(dst, '"')
		}
		dst = append(dst, ']')
	}
	return dst
}

// isCredential reports whether a field carries credentials.
func isCredential(name []byte) bool {
	return equalFold(name, "authorization") || equalFold(name, "proxy-authorization") || equalFold(name, "cookie")
}

// seenBefore reports whether a field named name is among hs.
func seenBefore(hs []codec.Header, name []byte) bool {
	for _, h := range hs {
		if equalFoldBytes(h.Name, name) {
			return true
		}
	}
	return false
}

// appendCanonical appends a field name in canonical form ("user-agent" ->
// "User-Agent"), escaped for JSON (field names are tokens, but a record
// must never be able to break its line).
func appendCanonical(dst, name []byte) []byte {
	upper := true
	for _, c := range name {
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		dst = appendEscapedByte(dst, c, true)
		upper = c == '-'
	}
	return dst
}

func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
