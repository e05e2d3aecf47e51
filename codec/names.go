package codec

// Field names and values that more than one package renders, spelled as
// gale's HTTP/1.1 heads spell them (HTTP/2 lower-cases names as it
// encodes). Static memory: never modified.
var (
	NameContentType     = []byte("Content-Type")
	NameContentLength   = []byte("Content-Length")
	NameContentEncoding = []byte("Content-Encoding")
	NameLastModified    = []byte("Last-Modified")
	NameETag            = []byte("ETag")
	NameAcceptRanges    = []byte("Accept-Ranges")
	NameVary            = []byte("Vary")
	NameServer          = []byte("Server")
	NameNosniff         = []byte("X-Content-Type-Options")

	ValueBytes          = []byte("bytes")           // of Accept-Ranges
	ValueAcceptEncoding = []byte("Accept-Encoding") // of Vary
	ValueNosniff        = []byte("nosniff")         // of X-Content-Type-Options
)
