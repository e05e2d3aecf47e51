package accesslog

import (
	"gale/clientcert"
	"gale/codec"
)

// Record is what an access log line says of one request. The line is
// formatted into the loop's buffer at once (see Log.AppendLine), so the
// record's slices need to be valid only while AppendLine runs; they alias
// either the request parsed in the current event, through FromRequest,
// or memory the connection owns, through Keep. Nothing else may fill a
// record (its fields are unexported for that reason): request bytes are valid only during the event that delivered
// them (gnet's read buffer and the TLS plaintext buffer are shared by all
// connections of a loop), and a request that failed to parse names
// nothing (codec.Parse leaves it empty).
//
// The zero record stands for a request that could not be parsed: its
// line names no method, target, version or fields.
//
// A Record is not safe for concurrent use: it belongs to the connection
// that fills it, on that connection's loop.
type Record struct {
	method    []byte
	target    []byte
	host      []byte
	referer   []byte
	userAgent []byte
	version   codec.Version    // meaningful only with a method
	headers   []codec.Header   // every request field (the JSON layout logs them, credentials redacted)
	store     []codec.Header   // Keep's storage for headers, reused
	cert      *clientcert.Info // the client's certificate; nil for none (immutable, shared)

	duration  int64 // nanoseconds from the request's first byte to the response's last (SetTiming)
	bytesRead int64 // request body bytes
}

// FromRequest fills a from r, a request parsed during the current event,
// and cert, the certificate its TLS client presented (nil for none).
// a aliases r's bytes: use it before the event ends, or Keep it.
func (a *Record) FromRequest(r *codec.Request, cert *clientcert.Info) {
	*a = Record{
		method:    r.Method,
		target:    r.Target,
		host:      r.Host,
		referer:   r.Header("Referer"),
		userAgent: r.Header("User-Agent"),
		version:   r.Version,
		headers:   r.Headers,
		store:     a.store,
		cert:      cert,
	}
}

// SetTiming notes how long the exchange took, from the request's first
// byte to the response's last (nanoseconds), and how many request body
// bytes were read, for the JSON layout's duration and bytes_read.
func (a *Record) SetTiming(duration, bytesRead int64) {
	a.duration, a.bytesRead = duration, bytesRead
}

// Keep copies a's bytes into buf (reusing its storage) and points a at
// the copy, so that a stays valid after the event that filled it, while
// buf is not otherwise written (a later Keep of another record into it
// included). It returns buf, grown if it had to be: pass it to the next
// Keep, and once the connection's buffers have grown Keep allocates
// nothing.
func (a *Record) Keep(buf []byte) []byte {
	b := append(buf[:0], a.method...)
	b = append(b, a.target...)
	b = append(b, a.host...)
	b = append(b, a.referer...)
	b = append(b, a.userAgent...)
	for _, h := range a.headers {
		b = append(b, h.Name...)
		b = append(b, h.Value...)
	}
	// Slice only once every append is done: an append may have moved b.
	rest := b
	a.method, rest = cut(rest, len(a.method))
	a.target, rest = cut(rest, len(a.target))
	a.host, rest = cut(rest, len(a.host))
	a.referer, rest = cut(rest, len(a.referer))
	a.userAgent, rest = cut(rest, len(a.userAgent))
	// The fields are rebuilt in a.store, which a.headers may be (a
	// record kept twice): entry i is read before it is written.
	n := len(a.headers)
	if cap(a.store) < n {
		grown := make([]codec.Header, n)
		copy(grown, a.headers)
		a.headers = grown
		a.store = grown
	}
	st := a.store[:n]
	for i := 0; i < n; i++ {
		h := a.headers[i]
		var name, value []byte
		name, rest = cut(rest, len(h.Name))
		value, rest = cut(rest, len(h.Value))
		st[i] = codec.Header{Name: name, Value: value}
	}
	a.store, a.headers = st, st
	return b
}

// cut splits the first n bytes off b, capacity included.
func cut(b []byte, n int) (head, rest []byte) { return b[:n:n], b[n:] }
