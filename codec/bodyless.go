package codec

// NoBody reports whether a response with status carries no body whatever
// its fields say: a response to HEAD (head true), and every 1xx, 204 and
// 304 response (RFC 9110 sections 6.4.1, 9.3.2, 15.3.5 and 15.4.5; RFC
// 9112 section 6.3, rules 1 and 2). It is the one statement of the rule
// for every protocol, both ways: the engines use it for what they send,
// the codec for what an upstream sends.
//
// With head false it is the status's own rule, which also decides whether
// a Content-Length is sent: a response to HEAD keeps the
// representation's length (RFC 9110 section 8.6), the bodyless statuses
// send none.
func NoBody(head bool, status int) bool {
	return head || status < 200 || status == 204 || status == 304
}

// IsHead reports whether the request's method is HEAD, whose response
// has a head only (NoBody).
func (r *Request) IsHead() bool { return string(r.Method) == "HEAD" }
