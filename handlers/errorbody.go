package handlers

import "strconv"

// Fixed error bodies. They depend on the status alone and never echo
// request input. The codec is meant to own them (ErrorBody,
// ErrorContentType, AcceptsJSONOnly); until it exports them, Ctx.Error
// uses these, which follow the same contract: a short text/plain body, or
// {"status":N,"error":"..."} for clients that accept only JSON.

var (
	ctErrorText = []byte("text/plain; charset=utf-8")
	ctErrorJSON = []byte("application/json")
)

// errorTexts are the reason phrases of the statuses handlers answer with.
var errorTexts = map[int]string{
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
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
	421: "Misdirected Request",
	429: "Too Many Requests",
	431: "Request Header Fields Too Large",
	500: "Internal Server Error",
	501: "Not Implemented",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Gateway Timeout",
	505: "HTTP Version Not Supported",
}

// errorBodies holds the rendered bodies, [0] text and [1] JSON.
var errorBodies = func() map[int][2][]byte {
	m := make(map[int][2][]byte, len(errorTexts))
	for status, text := range errorTexts {
		m[status] = renderErrorBodies(status, text)
	}
	return m
}()

var errorBodyUnknown = renderErrorBodies(0, "Error")

func renderErrorBodies(status int, text string) [2][]byte {
	code := strconv.Itoa(status)
	if status == 0 {
		return [2][]byte{[]byte(text + "\n"), []byte(`{"error":"` + text + `"}`)}
	}
	return [2][]byte{
		[]byte(code + " " + text + "\n"),
		[]byte(`{"status":` + code + `,"error":"` + text + `"}`),
	}
}

// errorBody returns the fixed body for status (static memory).
func errorBody(status int, asJSON bool) []byte {
	b, ok := errorBodies[status]
	if !ok {
		b = errorBodyUnknown
	}
	if asJSON {
		return b[1]
	}
	return b[0]
}

// errorContentType returns the Content-Type of errorBody (static memory).
func errorContentType(asJSON bool) []byte {
	if asJSON {
		return ctErrorJSON
	}
	return ctErrorText
}

// acceptsJSONOnly reports whether an Accept value lists only JSON media
// ranges (application/json or application/*+json) with a non-zero weight:
// API clients get JSON errors, browsers and "*/*" get text.
func acceptsJSONOnly(accept []byte) bool {
	seen := false
	for len(accept) > 0 {
		var elem []byte
		elem, accept = cutByte(accept, ',')
		typ, params := cutByte(elem, ';')
		typ = trimOWS(typ)
		if len(typ) == 0 {
			continue
		}
		if zeroWeight(params) {
			continue
		}
		if !isJSONType(typ) {
			return false
		}
		seen = true
	}
	return seen
}

func isJSONType(t []byte) bool {
	if len(t) < len("application/json") || !equalFoldBytes(t[:12], []byte("application/")) {
		return false
	}
	sub := t[12:]
	if equalFoldBytes(sub, []byte("json")) {
		return true
	}
	return len(sub) > 5 && equalFoldBytes(sub[len(sub)-5:], []byte("+json"))
}

// zeroWeight reports whether media-range parameters carry q=0.
func zeroWeight(params []byte) bool {
	for len(params) > 0 {
		var p []byte
		p, params = cutByte(params, ';')
		p = trimOWS(p)
		if len(p) < 2 || p[0]|0x20 != 'q' || p[1] != '=' {
			continue
		}
		for _, b := range p[2:] {
			if b != '0' && b != '.' {
				return false
			}
		}
		return true
	}
	return false
}

func cutByte(s []byte, sep byte) (before, after []byte) {
	for i, b := range s {
		if b == sep {
			return s[:i], s[i+1:]
		}
	}
	return s, nil
}

func trimOWS(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
