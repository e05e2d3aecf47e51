package h3

import (
	"io"
	"net/http"

	"gale/codec"
)

// errBodyTooLarge is what a request body over limits.body_bytes reads as.
var errBodyTooLarge = &codec.Error{Status: 413, Reason: "request body over limits.body_bytes"}

// limitedBody is a request's body as the adapter hands it on, to the
// reader that drops it and to the body source of a forwarded exchange:
// quic-go's body bounded by limits.body_bytes, the one place HTTP/3
// enforces that limit. A declared length over it, or the byte past it,
// reads as errBodyTooLarge (a *codec.Error 413), and so does every read
// after that.
type limitedBody struct {
	body  io.ReadCloser
	limit int64
	total int64 // bytes read
	over  bool
}

// init bounds r's body by limit.
func (b *limitedBody) init(r *http.Request, limit int64) {
	*b = limitedBody{body: r.Body, limit: limit, over: r.ContentLength > limit}
}

// Read implements io.Reader. The read that passes the limit returns its
// bytes with errBodyTooLarge.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, errBodyTooLarge
	}
	n, err := b.body.Read(p)
	b.total += int64(n)
	if b.total > b.limit {
		b.over = true
		return n, errBodyTooLarge
	}
	return n, err
}

// Close implements io.Closer: it closes the stream's body.
func (b *limitedBody) Close() error { return b.body.Close() }
