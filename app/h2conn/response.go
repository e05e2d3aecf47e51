package h2conn

import (
	"os"
	"strconv"

	"gale/app/wire"
	"gale/fds"
	"gale/h2/hpack"
	"gale/handlers"
)

// HTTP/2 responses: the head as an HPACK block (the cached entry's
// pre-encoded one when the handler gave it, else encoded from the
// response's status and fields), then the body as DATA frames under the
// stream's and the connection's send windows, produced round-robin over
// the streams that have body left, one frame per stream per round, so a
// large download never holds up the small responses beside it.

// appendHead appends the HPACK block of resp's head to dst: with the
// fields every response head gets (wire.HeadFields), the Server field
// but for a pre-encoded block, which has its own.
func (ex *exchange) appendHead(dst []byte, resp *handlers.Response, bodyless bool, size int64) []byte {
	h := ex.h
	if resp.HPACK != nil {
		dst = append(dst, resp.HPACK...)
		f := wire.CommonFields(h.altSvc, nil, nil)
		return f.AppendHPACK(dst)
	}
	set := h.wc.Loop.Shared.Set.Load()
	dst = hpack.AppendStatus(dst, resp.Status)
	f := wire.CommonFields(h.altSvc, set.ServerHeader, resp.Headers) // a Date among them (a stored response's) is sent instead of the current one
	dst = f.AppendHPACK(dst)
	dst, h.lower = handlers.AppendHPACKFields(dst, h.lower, resp.Headers)
	if !bodyless {
		var n [20]byte
		dst = hpack.AppendField(dst, fieldContentLength, strconv.AppendInt(n[:0], size, 10))
	}
	return dst
}

var fieldContentLength = []byte("content-length")

// enqueue adds ex to the exchanges with body left to send.
func (h *Conn) enqueue(ex *exchange) {
	if !ex.queued {
		ex.queued = true
		if len(h.active) == 0 {
			h.progress = h.now
		}
		h.active = append(h.active, ex)
	}
}

// dequeue removes ex from the exchanges with body left to send.
func (h *Conn) dequeue(ex *exchange) {
	if !ex.queued {
		return
	}
	ex.queued = false
	h.memHeld -= ex.mem
	ex.mem = 0
	for i, a := range h.active {
		if a == ex {
			copy(h.active[i:], h.active[i+1:])
			h.active[len(h.active)-1] = nil
			h.active = h.active[:len(h.active)-1]
			if h.turn > i {
				h.turn--
			}
			return
		}
	}
}

// produce sends body bytes of the active exchanges while the windows and
// the output bound allow, resuming first the exchanges whose file-cache
// load finished. Inline, it flushes after each round and stops when the
// socket stops taking bytes (the output then moves to the writer once
// gnet's buffer drained); with the writer, it stops at the bound and the
// writer wakes the loop when there is room.
func (h *Conn) produce() {
	h.resumeWaiting()
	if h.parked > 0 {
		h.unparkWaiting()
	}
	if h.w == nil && h.wantWriter && !h.startWriter() {
		return
	}
	for len(h.active) > 0 && !h.wc.Dead {
		room := h.room()
		if room <= 0 {
			if h.w != nil {
				h.w.askRoom()
			}
			return
		}
		if h.w == nil && h.produced >= maxProducePerEvent {
			h.wake()
			return
		}
		if !h.round(room) {
			return // every window is closed: WINDOW_UPDATE resumes
		}
		if h.parked > 0 {
			h.unparkWaiting() // finished bodies made room
		}
		h.progress = h.now
		if h.w == nil {
			h.flush()
			if !h.wc.Dead && h.wc.OutboundBuffered() > 0 && len(h.active) > 0 {
				h.wantWriter = true
				return
			}
		}
	}
}

// round gives each active exchange up to one frame (a lone exchange the
// whole room), starting where the previous round ran out of room, and
// finishes the exchanges whose body is sent. It reports whether any byte
// was produced.
func (h *Conn) round(room int) bool {
	quantum := int(h.core.PeerMaxFrame())
	if len(h.active) == 1 {
		quantum = room
	}
	progress := false
	n := len(h.active)
	start := h.turn % n
	i := 0
	for ; i < n && room > 0; i++ {
		ex := h.active[(start+i)%n]
		k := ex.step(min(quantum, room))
		room -= k
		if k > 0 {
			progress = true
		}
	}
	h.turn = (start + i) % n
	h.finishSent()
	return progress
}

// finishSent finishes and removes the active exchanges whose whole body
// was queued.
func (h *Conn) finishSent() {
	for i := 0; i < len(h.active); {
		ex := h.active[i]
		if ex.sink.head {
			// A streamed response: it leaves the queue when what its
			// producer wrote went, and ends once the producer ended it.
			if ex.sink.queued() > 0 && ex.sink.usable() {
				i++
				continue
			}
			h.dequeue(ex)
			if ex.forwarded {
				ex.endForwarded()
			}
			continue
		}
		if len(ex.parts) > 0 {
			i++
			continue
		}
		h.dequeue(ex)
		ex.dropFile()
		ex.finish()
	}
}

// step sends up to limit body bytes of ex and returns how many it sent.
func (ex *exchange) step(limit int) int {
	if ex.sink.head {
		return ex.sink.step(limit)
	}
	h := ex.h
	win := h.core.SendWindow(ex.s)
	limit = min(limit, win)
	sent := 0
	for limit > 0 && len(ex.parts) > 0 && !h.wc.Dead {
		p := &ex.parts[0]
		size := p.Size()
		rem := size - ex.off
		k := int(min(rem, int64(limit)))
		var took int
		if p.Data != nil {
			last := len(ex.parts) == 1 && int64(k) == rem
			took = h.core.WriteData(ex.s, p.Data[ex.off:ex.off+int64(k)], last)
		} else {
			took = ex.stepFile(p, k)
		}
		ex.off += int64(took)
		sent += took
		limit -= took
		if ex.off == size {
			ex.parts = ex.parts[1:]
			ex.off = 0
		}
		if took < k || took == 0 {
			break
		}
	}
	if sent > 0 {
		ex.sent += int64(sent)
		h.produced += sent
	}
	return sent
}

// stepFile sends up to k bytes (one frame at most) of the file region p
// from ex.off: read by the writer when there is one, else read here (only
// bodies small enough for the loop's buffers are read on the loop).
func (ex *exchange) stepFile(p *handlers.BodyPart, k int) int {
	h := ex.h
	k = min(k, int(h.core.PeerMaxFrame()))
	last := len(ex.parts) == 1 && int64(k) == p.Len-ex.off
	if ex.file == nil || !h.core.AppendDataHeader(ex.s, k, last) {
		return 0
	}
	if h.w != nil {
		h.moveOut()
		ex.fileQueued = true
		h.w.queueFile(ex.file, ex.version, p.Off+ex.off, int64(k))
		h.wc.Loop.Stats.BytesOut.Add(uint64(k))
		return k
	}
	h.moveOut()
	l := h.wc.Loop
	l.FileBuf = wire.GrowLen(l.FileBuf[:0], k)
	if _, err := ex.version.ReadAt(ex.file, l.FileBuf, p.Off+ex.off); err != nil {
		// The frame header is out: the connection cannot go on.
		h.closing = true
		_ = h.wc.C.Close()
		return 0
	}
	if !h.wc.Dead {
		h.wc.Send(l.FileBuf)
		l.Stats.BytesOut.Add(uint64(k))
	}
	return k
}

// dropFile closes the body's file, or, when the writer has regions of it
// still to read, has the writer close it after them. The file's place in
// the descriptor budget, taken when the exchange took the file (answer),
// is given back once it is closed.
func (ex *exchange) dropFile() {
	f := ex.file
	if f == nil {
		return
	}
	ex.file = nil
	if ex.fileQueued && ex.h.w != nil {
		ex.h.w.queueClose(f)
	} else {
		closeHeld(f, ex.h.wc.Loop.Shared.Budget)
	}
	ex.fileQueued = false
}

// closeHeld closes f, a file an exchange held, and gives its descriptor
// back to b.
func closeHeld(f *os.File, b *fds.Budget) {
	_ = f.Close()
	b.Release(1)
}
