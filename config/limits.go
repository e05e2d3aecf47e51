package config

// The defaults of server.limits, declared here once: the key table's
// documentation renders them, and the protocol engines (codec for
// HTTP/1.1, h2, the HTTP/3 adapter) fall back on them when handed a zero
// limit.
const (
	DefaultRequestLine = 8 << 10  // limits.request_line: longest request line, CRLF excluded; longer: 414
	DefaultHeaderBytes = 16 << 10 // limits.header_bytes: largest request head; larger: 431
	DefaultBodyBytes   = 10 << 20 // limits.body_bytes: largest request body; larger: 413
)
