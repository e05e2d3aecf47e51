package h3

import (
	"net/http"
	"strconv"
	"sync"

	"gale/app/wire"
	"gale/codec"
	"gale/handlers"
)

// write writes the answered response to w: the head, then the body from
// memory (the exchange's scratch, the configuration's, or a pinned cache
// entry's) or from the response's file, read here, off the loops. It runs
// on the request's goroutine after the loop signalled done.
func (ex *exchange) write(w http.ResponseWriter) {
	resp := &ex.ctx.Resp
	h := w.Header()
	var server []byte // a head rendered ahead of time has its own
	if resp.Head == nil {
		server = ex.server
	}
	var own []codec.Header // a Date among the fields (a stored response's) is sent instead of the current one
	if resp.Head == nil {
		own = resp.Headers
	}
	common := wire.CommonFields(nil, server, own)
	if resp.Head != nil {
		ex.l.heads.get(resp.Head).addTo(h)
	} else {
		ex.addFields(h, resp, common.Server)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: the field is absent as on the other protocols
	}
	ex.l.addDate(h, &common)
	bodyless := codec.NoBody(false, ex.status)
	if bodyless {
		delete(h, "Content-Length")
	} else {
		h["Content-Length"] = []string{strconv.FormatInt(ex.size, 10)}
	}
	w.WriteHeader(ex.status)
	if ex.noBody || ex.size == 0 {
		return
	}
	ex.writeBody(w, resp)
}

// addFields adds the Server field of value server (nil: none) and resp's
// fields to h, but the connection-specific ones. The values of all fields
// share one slice.
func (ex *exchange) addFields(h http.Header, resp *handlers.Response, server []byte) {
	vals := make([]string, 0, len(resp.Headers)+1)
	if server != nil {
		vals = append(vals, string(server))
		h["server"] = vals[0:1:1]
	}
	for _, f := range resp.Headers {
		if codec.ConnectionSpecific(f.Name) {
			continue
		}
		k := fieldKey(f.Name)
		vals = append(vals, string(f.Value))
		if old := h[k]; old != nil {
			h[k] = append(old, vals[len(vals)-1])
		} else {
			h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
}

// writeBody writes resp's body: bytes, file regions, or parts of both.
func (ex *exchange) writeBody(w http.ResponseWriter, resp *handlers.Response) {
	switch {
	case resp.Parts != nil:
		for _, p := range resp.Parts {
			if p.Data != nil {
				if _, err := w.Write(p.Data); err != nil {
					return
				}
			} else if !copyFile(w, resp, p.Off, p.Len) {
				return
			}
		}
	case resp.File != nil:
		copyFile(w, resp, resp.FileOffset, resp.FileSize)
	default:
		_, _ = w.Write(resp.Body)
	}
}

// fileBufs are the buffers file bodies are read into.
var fileBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyFile writes n bytes of resp.File from off to w, and reports
// whether all of them went out.
func copyFile(w http.ResponseWriter, resp *handlers.Response, off, n int64) bool {
	bp := fileBufs.Get().(*[]byte)
	defer fileBufs.Put(bp)
	for n > 0 {
		b := (*bp)[:min(int64(len(*bp)), n)]
		k, err := resp.File.ReadAt(b, off)
		if k > 0 {
			if _, werr := w.Write(b[:k]); werr != nil {
				return false
			}
		}
		if k < len(b) || (err != nil && k == 0) {
			return false // the file shrank under the response: the stream ends short
		}
		off += int64(k)
		n -= int64(k)
	}
	return true
}

// addDate adds f's Date, if any, to h, in the one slice of the current
// second. Alt-Svc is not sent over HTTP/3, and Server goes with the
// response's own fields (addFields).
func (l *Listener) addDate(h http.Header, f *wire.HeadFields) {
	if f.Date != nil {
		h["Date"] = l.date.values(f.Date)
	}
}
