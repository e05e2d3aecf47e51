package wire

import (
	"gale/codec"
	"gale/h2/hpack"
)

// HeadFields are the fields every response head gets besides its own,
// whichever engine sends it: Date, the current second's (RFC 9110 section
// 6.6.1), rendered once a second; Alt-Svc, on a listener that also serves
// HTTP/3 (RFC 7838); Server, when server.server_header is set. Each
// engine encodes them in its own form: HTTP/1.1 field lines
// (AppendLines), HPACK fields (AppendHPACK), HTTP/3 header map entries
// (app/h3). A nil field is not sent. The values are shared and must not be
// modified.
type HeadFields struct {
	Date   []byte // the Date value of the current second; nil when the response has its own
	Server []byte // the Server value; nil when none is configured or the head already has it
	AltSvc []byte // the Alt-Svc value advertising HTTP/3 on the listener; nil for none
}

// CommonFields returns the fields a response head gets on a listener
// whose Alt-Svc value is altSvc (nil: none), with Server value server
// (nil or empty: none): Date unless own, the head's own fields, has one.
// It does not allocate.
func CommonFields(altSvc, server []byte, own []codec.Header) HeadFields {
	f := HeadFields{AltSvc: altSvc}
	if len(server) > 0 {
		f.Server = server
	}
	if !HasField(own, "date") {
		f.Date = codec.DateValue()
	}
	return f
}

// AppendLines appends f as HTTP/1.1 field lines, in the order of
// headNames. It does not allocate when dst has room.
func (f *HeadFields) AppendLines(dst []byte) []byte {
	for i, v := range f.values() {
		if v != nil {
			dst = codec.AppendFieldLine(dst, headNames[i].line, v)
		}
	}
	return dst
}

// AppendHPACK appends f to an HPACK block, in the order of headNames,
// each a literal without indexing like every field of a response. It
// does not allocate when dst has room.
func (f *HeadFields) AppendHPACK(dst []byte) []byte {
	for i, v := range f.values() {
		if v != nil {
			dst = hpack.AppendField(dst, headNames[i].lower, v)
		}
	}
	return dst
}

// values lists f's values in the order of headNames.
func (f *HeadFields) values() [3][]byte { return [3][]byte{f.Date, f.Server, f.AltSvc} }

// headNames are the names of HeadFields, in the order they are sent: as
// HTTP/1.1 spells them and in the lower case HTTP/2 requires.
var headNames = [3]struct{ line, lower []byte }{
	{[]byte("Date"), []byte("date")},
	{codec.NameServer, []byte("server")},
	{[]byte("Alt-Svc"), []byte("alt-svc")},
}

// HasField reports whether fs holds a field named name (ASCII
// case-insensitive).
func HasField(fs []codec.Header, name string) bool {
	for i := range fs {
		if len(fs[i].Name) == len(name) && codec.EqualFold(fs[i].Name, name) {
			return true
		}
	}
	return false
}
