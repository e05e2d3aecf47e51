package codec

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ResponseHead describes a response head for AppendResponseHead.
// Header names and values are rendered as given; the caller has validated
// them (config values are checked at load time).
type ResponseHead struct {
	Status        int      // 100..599; anything else renders 500
	Version       Version  // the request's version; the status line says HTTP/1.1 either way (RFC 9110 6.2), but HTTP/1.0 changes keep-alive rendering
	Headers       []Header // extra fields, rendered in order
	ContentLength int64    // rendered as Content-Length when >= 0 (never for 1xx and 204, RFC 9110 8.6); -1 renders none
	Close         bool     // render "Connection: close"
	KeepAlive10   bool     // HTTP/1.0 client that asked for keep-alive: render "Connection: keep-alive" (unless Close)
	Server        []byte   // Server field value; nil or empty renders none
	OwnDate       bool     // Headers carry their own Date (a stored response's): render no current one
}

const crlf = "\r\n"

// AppendResponseHead appends the status line, Date, Server, the extra
// headers, Content-Length and Connection fields and the empty line to dst.
// It does not allocate when dst has room. It keeps no reference to h. Safe
// for concurrent use.
func AppendResponseHead(dst []byte, h *ResponseHead) []byte {
	status := h.Status
	if status < 100 || status > 599 {
		status = 500
	}
	dst = AppendStatusLine(dst, status)
	if !h.OwnDate {
		dst = AppendDate(dst)
	}
	if len(h.Server) > 0 {
		dst = AppendFieldLine(dst, NameServer, h.Server)
	}
	dst = AppendFieldLines(dst, h.Headers)
	if h.ContentLength >= 0 && status >= 200 && status != 204 {
		dst = AppendContentLength(dst, h.ContentLength)
	}
	dst = AppendConnection(dst, h.Close, h.KeepAlive10)
	return append(dst, crlf...)
}

// The Date field (RFC 9110 section 6.6.1) is rendered once a second by one
// goroutine, started by the first AppendDate, into a fresh slice that is
// then published through an atomic pointer; readers load the pointer and
// copy the bytes. A published slice is never written again, so readers
// need no lock (fasthttp's serverDate, nginx's cached time strings).
var (
	dateOnce sync.Once
	dateLine atomic.Pointer[[]byte] // "Date: <IMF-fixdate>\r\n"
)

func startDate() {
	refreshDate()
	go func() {
		for {
			now := time.Now()
			time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
			refreshDate()
		}
	}()
}

func refreshDate() {
	b := make([]byte, 0, len("Date: Mon, 02 Jan 2006 15:04:05 GMT\r\n"))
	b = append(b, "Date: "...)
	b = AppendHTTPDate(b, time.Now())
	b = append(b, crlf...)
	dateLine.Store(&b)
}

// AppendDate appends "Date: <IMF-fixdate>\r\n" for the current second. The
// text is rendered once a second and read without locks; AppendDate does
// not allocate when dst has room. The first call starts the goroutine that
// renders it, which runs for the life of the process. Safe for concurrent
// use.
func AppendDate(dst []byte) []byte {
	dateOnce.Do(startDate)
	return append(dst, *dateLine.Load()...)
}

// DateValue returns the Date field value (the IMF-fixdate) of the current
// second, rendered once a second like AppendDate's line, of which it is a
// part. The bytes are never written again: the result may be kept and
// read from any goroutine, and must not be modified.
func DateValue() []byte {
	dateOnce.Do(startDate)
	line := *dateLine.Load()
	end := len(line) - len(crlf)
	return line[len("Date: "):end:end]
}

// AppendHTTPDate appends t as an IMF-fixdate (RFC 9110 section 5.6.7),
// e.g. "Sun, 06 Nov 1994 08:49:37 GMT", as used by Date and Last-Modified.
// It does not allocate when dst has room.
func AppendHTTPDate(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, "Mon, 02 Jan 2006 15:04:05 GMT")
}

// StatusText returns the reason phrase for code ("" if unknown). Safe for
// concurrent use.
func StatusText(code int) string {
	if code < 0 || code >= len(statusText) {
		return ""
	}
	return statusText[code]
}

// statusText holds the reason phrases of the registered status codes
// (RFC 9110 section 15 and the IANA registry).
var statusText = [600]string{
	100: "Continue",
	101: "Switching Protocols",
	102: "Processing",
	103: "Early Hints",

	200: "OK",
	201: "Created",
	202: "Accepted",
	203: "Non-Authoritative Information",
	204: "No Content",
	205: "Reset Content",
	206: "Partial Content",
	207: "Multi-Status",
	208: "Already Reported",
	226: "IM Used",

	300: "Multiple Choices",
	301: "Moved Permanently",
	302: "Found",
	303: "See Other",
	304: "Not Modified",
	305: "Use Proxy",
	307: "Temporary Redirect",
	308: "Permanent Redirect",

	400: "Bad Request",
	401: "Unauthorized",
	402: "Payment Required",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	407: "Proxy Authentication Required",
	408: "Request Timeout",
	409: "Conflict",
	410: "Gone",
	411: "Length Required",
	412: "Precondition Failed",
	413: "Content Too Large",
	414: "URI Too Long",
	415: "Unsupported Media Type",
	416: "Range Not Satisfiable",
	417: "Expectation Failed",
	418: "I'm a teapot",
	421: "Misdirected Request",
	422: "Unprocessable Content",
	423: "Locked",
	424: "Failed Dependency",
	425: "Too Early",
	426: "Upgrade Required",
	428: "Precondition Required",
	429: "Too Many Requests",
	431: "Request Header Fields Too Large",
	451: "Unavailable For Legal Reasons",

	500: "Internal Server Error",
	501: "Not Implemented",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Gateway Timeout",
	505: "HTTP Version Not Supported",
	506: "Variant Also Negotiates",
	507: "Insufficient Storage",
	508: "Loop Detected",
	510: "Not Extended",
	511: "Network Authentication Required",
}

// Pre-rendered bytes per status, built once at start: the status lines of
// the registered codes and the error bodies of every code 100..599. Each
// entry is a capacity-limited subslice of one shared array, so an append
// to it copies rather than clobbering its neighbour.
var (
	statusLines [600][]byte // "HTTP/1.1 404 Not Found\r\n"; nil for unregistered codes
	textBodies  [600][]byte // "404 Not Found\n"
	jsonBodies  [600][]byte // {"status":404,"error":"Not Found"}\n
)

func init() {
	var lines, text, js []byte
	for code := 100; code < 600; code++ {
		reason := statusText[code]
		if reason != "" {
			lines = append(lines, "HTTP/1.1 "...)
			lines = strconv.AppendInt(lines, int64(code), 10)
			lines = append(lines, ' ')
			lines = append(lines, reason...)
			lines = append(lines, crlf...)
		} else {
			reason = classText[code/100]
		}
		text = strconv.AppendInt(text, int64(code), 10)
		text = append(text, ' ')
		text = append(text, reason...)
		text = append(text, '\n')
		js = append(js, `{"status":`...)
		js = strconv.AppendInt(js, int64(code), 10)
		js = append(js, `,"error":"`...)
		js = append(js, reason...)
		js = append(js, "\"}\n"...)
	}
	// Cut the shared arrays into entries once they stopped moving.
	var lo, to, jo int
	for code := 100; code < 600; code++ {
		if statusText[code] != "" {
			n := lo + len("HTTP/1.1 NNN ") + len(statusText[code]) + 2
			statusLines[code] = lines[lo:n:n]
			lo = n
		}
		n := to
		for text[n] != '\n' {
			n++
		}
		n++
		textBodies[code] = text[to:n:n]
		to = n
		n = jo
		for js[n] != '\n' {
			n++
		}
		n++
		jsonBodies[code] = js[jo:n:n]
		jo = n
	}
}

// classText names the status classes (RFC 9110 section 15), the reason
// used in error bodies for unregistered codes.
var classText = [6]string{1: "Informational", 2: "Successful", 3: "Redirection", 4: "Client Error", 5: "Server Error"}

// AppendStatusLine appends "HTTP/1.1 <status> <reason>\r\n": pre-rendered
// for registered codes, rendered with an empty reason for other codes in
// 100..599; any other status is rendered as 500. It does not allocate
// when dst has room.
func AppendStatusLine(dst []byte, status int) []byte {
	if status < 100 || status > 599 {
		status = 500
	}
	if line := statusLines[status]; line != nil {
		return append(dst, line...)
	}
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	return append(dst, " \r\n"...)
}

// ErrorBody returns the fixed body of an error response for status: text,
// e.g. "404 Not Found\n", or when asJSON, {"status":404,"error":"Not Found"}
// and a newline. Unregistered codes in 100..599 use their class name
// ("599 Server Error\n"); a status outside 100..599 gives the body of 500.
// The result is static memory shared by all callers: do not modify it.
// Safe for concurrent use.
func ErrorBody(status int, asJSON bool) []byte {
	if status < 100 || status > 599 {
		status = 500
	}
	if asJSON {
		return jsonBodies[status]
	}
	return textBodies[status]
}

var (
	textContentType = []byte("text/plain; charset=utf-8")
	jsonContentType = []byte("application/json")
)

// ErrorContentType returns the Content-Type value of ErrorBody's bodies.
// The result is static memory: do not modify it.
func ErrorContentType(asJSON bool) []byte {
	if asJSON {
		return jsonContentType
	}
	return textContentType
}

var ()

// AppendErrorResponse appends a complete fixed error response for status
// (head and body) that never echoes request input: a short text/plain body,
// or a JSON body {"status":N,"error":"..."} when asJSON (see ErrorBody),
// with X-Content-Type-Options: nosniff. It always renders
// "Connection: close" when closeConn is set. Statuses that carry no body
// (1xx, 204, 304) get none. It does not allocate when dst has room. Safe
// for concurrent use.
func AppendErrorResponse(dst []byte, status int, asJSON, closeConn bool, server []byte) []byte {
	if status < 100 || status > 599 {
		status = 500
	}
	var body []byte
	if status >= 200 && status != 204 && status != 304 {
		body = ErrorBody(status, asJSON)
	}
	fields := [2]Header{
		{Name: NameContentType, Value: ErrorContentType(asJSON)},
		{Name: NameNosniff, Value: ValueNosniff},
	}
	h := ResponseHead{
		Status:        status,
		ContentLength: -1,
		Close:         closeConn,
		Server:        server,
	}
	if body != nil {
		h.Headers = fields[:]
		h.ContentLength = int64(len(body))
	}
	dst = AppendResponseHead(dst, &h)
	return append(dst, body...)
}

// AcceptsJSONOnly reports whether an Accept field value (RFC 9110 section
// 12.5.1) asks for application/json and for none of text/html, text/plain,
// text/* and */*, counting only media ranges with a q weight above 0. It
// chooses JSON error bodies. It does not allocate and keeps no reference to
// accept. Safe for concurrent use.
func AcceptsJSONOnly(accept []byte) bool {
	json := false
	for rest := accept; len(rest) > 0; {
		var elem []byte
		elem, rest = nextElement(rest)
		media, params := elem, []byte(nil)
		for i, c := range elem {
			if c == ';' {
				media, params = TrimOWS(elem[:i]), elem[i+1:]
				break
			}
		}
		if len(media) == 0 || zeroWeight(params) {
			continue
		}
		switch {
		case EqualFold(media, "application/json"):
			json = true
		case EqualFold(media, "text/html"), EqualFold(media, "text/plain"),
			EqualFold(media, "text/*"), EqualFold(media, "*/*"):
			return false
		}
	}
	return json
}

// zeroWeight reports whether media-range parameters carry q=0 (with any
// number of zero decimals; RFC 9110 section 12.4.2).
func zeroWeight(params []byte) bool {
	for len(params) > 0 {
		var p []byte
		p, params = params, nil
		for i, c := range p {
			if c == ';' {
				p, params = p[:i], p[i+1:]
				break
			}
		}
		p = TrimOWS(p)
		if len(p) < 2 || lower(p[0]) != 'q' {
			continue
		}
		v := TrimOWS(p[1:])
		if len(v) == 0 || v[0] != '=' {
			continue
		}
		v = TrimOWS(v[1:])
		if len(v) == 0 || v[0] != '0' {
			return false
		}
		for _, c := range v[1:] {
			if c != '.' && c != '0' {
				return false
			}
		}
		return true
	}
	return false
}
