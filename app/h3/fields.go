package h3

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"unsafe"

	"gale/codec"
)

// The response fields as net/http's header map for quic-go's
// ResponseWriter. quic-go lower-cases each name as it encodes it
// (allocating when the name has upper case) and looks for Date,
// Content-Length and Content-Type under their canonical names: so those
// three are keyed canonically and every other name in lower case, from
// constants for the common ones.

// fieldKey is the header map key of field name.
func fieldKey(name []byte) string {
	for _, k := range commonKeys {
		if codec.EqualFoldBytes(name, []byte(k)) {
			switch k {
			case "content-type":
				return "Content-Type"
			case "content-length":
				return "Content-Length"
			case "date":
				return "Date"
			}
			return k
		}
	}
	return string(codec.AppendLower(nil, name))
}

var commonKeys = [...]string{
	"content-type", "content-length", "date", "server", "etag", "last-modified",
	"cache-control", "vary", "accept-ranges", "content-encoding", "content-range",
	"location", "x-content-type-options", "expires", "x-frame-options", "strict-transport-security",
}

// parsedHead is a head rendered ahead of time (Response.Head) as header
// map keys and values, but its status line and Date. Immutable.
type parsedHead struct {
	head *byte // the head it was parsed from, which it keeps alive
	n    int
	keys []string
	vals []string
}

// addTo adds the fields to h, sharing the parsed values (quic-go only
// reads them).
func (p *parsedHead) addTo(h http.Header) {
	for i, k := range p.keys {
		if old := h[k]; old != nil {
			h[k] = append(old[:len(old):len(old)], p.vals[i])
		} else {
			h[k] = p.vals[i : i+1 : i+1]
		}
	}
}

// headCache remembers the parsed form of the heads rendered ahead of
// time that responses carried lately: a cached file's head is parsed
// once, not per request. Direct-mapped by the head's address; a slot
// keeps its head alive, so an address is never reused while a slot names
// it. Safe for concurrent use.
type headCache struct {
	slots [256]atomic.Pointer[parsedHead]
}

// get returns the parsed form of head.
func (c *headCache) get(head []byte) *parsedHead {
	at := unsafe.Pointer(unsafe.SliceData(head))
	slot := &c.slots[(uintptr(at)>>4)%uintptr(len(c.slots))]
	if p := slot.Load(); p != nil && unsafe.Pointer(p.head) == at && p.n == len(head) {
		return p
	}
	p := parseHead(head)
	slot.Store(p)
	return p
}

// parseHead parses head: after the status line, "Name: value" lines,
// the Date line left out (the writer renders the current one).
func parseHead(head []byte) *parsedHead {
	p := &parsedHead{head: unsafe.SliceData(head), n: len(head)}
	i := bytes.IndexByte(head, '\n') + 1 // after the status line
	for i < len(head) {
		end := bytes.IndexByte(head[i:], '\n')
		if end < 0 {
			end = len(head) - i
		}
		line := bytes.TrimRight(head[i:i+end], "\r")
		i += end + 1
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		k := fieldKey(line[:colon])
		if k == "Date" || k == "Content-Length" {
			continue // the writer renders both
		}
		p.keys = append(p.keys, k)
		p.vals = append(p.vals, string(bytes.TrimLeft(line[colon+1:], " \t")))
	}
	return p
}

// dateCache is the Date value of the current second (wire.HeadFields) as
// a header map value, converted once a second and shared by the
// responses of that second. Safe for concurrent use.
type dateCache struct {
	cur atomic.Pointer[dateSlot]
}

type dateSlot struct {
	src *byte // the value it was converted from, which is never rewritten
	val []string
}

// values returns v, the Date value of the current second, as a header
// map value.
func (d *dateCache) values(v []byte) []string {
	if s := d.cur.Load(); s != nil && s.src == unsafe.SliceData(v) {
		return s.val
	}
	s := &dateSlot{src: unsafe.SliceData(v), val: []string{string(v)}}
	d.cur.Store(s)
	return s.val
}
