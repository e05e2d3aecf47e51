package codec

// BodyReader frames a request body (Content-Length or chunked) out of
// bytes as they arrive, without copying. Reuse it per request with Init.
type BodyReader struct {
	// unexported state
}

// Init prepares b for the body of r, bounded by max bytes of payload.
func (b *BodyReader) Init(r *Request, max int64) { panic("unimplemented") }

// Next frames the next piece of body from in. It returns how many bytes of
// in it consumed, a payload segment (a subslice of in, possibly empty), and
// done once the whole body (for chunked: through the trailers and final
// CRLF) has been consumed. Call it repeatedly while it consumes bytes; when
// it consumes none and is not done, it needs more input. Errors are *Error
// (400 for bad chunk syntax, 413 over max).
func (b *BodyReader) Next(in []byte) (consumed int, payload []byte, done bool, err error) {
	panic("unimplemented")
}
