package codec

// CopyTo makes dst a copy of r whose bytes live in buf (grown when it is
// too small) instead of wherever r's bytes live, and returns buf for
// reuse. It is how an engine keeps a request past the event that
// delivered it: r's bytes alias an inbound buffer (HTTP/1.1) or a header
// block's decoded memory (HTTP/2) that the next request overwrites.
// dst keeps its header storage; dst must not be r, and buf must not hold
// any of r's bytes. It allocates only when buf or dst's header storage is
// too small, so a buffer reused between requests stops allocating.
func (r *Request) CopyTo(dst *Request, buf []byte) []byte {
	n := len(r.Method) + len(r.Target) + len(r.Path) + len(r.Query) + len(r.Host)
	for _, f := range r.Headers {
		n += len(f.Name) + len(f.Value)
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	b := buf[:0] // never grows past n: the pieces cut below stay in place
	hs := dst.Headers[:0]
	*dst = *r
	b, dst.Method = keep(b, r.Method)
	b, dst.Target = keep(b, r.Target)
	b, dst.Path = keep(b, r.Path)
	b, dst.Query = keep(b, r.Query)
	b, dst.Host = keep(b, r.Host)
	for _, f := range r.Headers {
		var h Header
		b, h.Name = keep(b, f.Name)
		b, h.Value = keep(b, f.Value)
		hs = append(hs, h)
	}
	dst.Headers = hs
	return b
}

// keep appends p to b and returns b and the appended copy, capped at its
// length (nil stays nil: a nil Query means no '?', a nil Host no host).
func keep(b, p []byte) ([]byte, []byte) {
	if p == nil {
		return b, nil
	}
	at := len(b)
	b = append(b, p...)
	return b, b[at:len(b):len(b)]
}
