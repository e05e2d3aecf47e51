package h2

// streamState is where a stream is in its life (RFC 9113 section 5.1), as
// far as a server sees it: a stream we hold is open or half-closed; idle
// and closed streams hold no slot.
type streamState uint8

const (
	stateFree             streamState = iota // the slot holds no stream
	stateOpen                                // both sides may send
	stateHalfClosedRemote                    // the peer sent END_STREAM; we may send
	stateHalfClosedLocal                     // we sent END_STREAM; the peer may send
)

// Stream is one stream's protocol state (RFC 9113 section 5.1). It is owned
// by its Conn and lives in the Conn's fixed pool: the engine reads ID, Slot,
// BodyFollows and TooLarge, and never keeps a *Stream after Handler.Reset,
// after it reset the stream itself (Conn.Reset), or after it ended the
// response (END_STREAM from WriteHeaders, WriteData or AppendDataHeader):
// the stream is then closed, or reset with NO_ERROR when the request body
// has not ended (section 8.1), no more Handler calls name it, and its slot
// is recycled for a new stream. Like the Conn, a Stream is used only on the
// Conn's event loop.
type Stream struct {
	ID          uint32 // the stream identifier, odd (client-initiated, section 5.1.1)
	Slot        int    // 0..MaxConcurrentStreams-1, stable for the stream's life: the engine keeps per-stream state in a slice indexed by it
	BodyFollows bool   // the request has a body (no END_STREAM on HEADERS, section 8.1)
	TooLarge    bool   // the decoded field list exceeded MaxHeaderListSize: Request is still called (with the pseudo-header fields and the fields that fit) and the engine answers 431; when the pseudo-header fields did not fit, the Conn answers 431 itself and the Handler sees nothing

	state       streamState
	requested   bool  // Handler.Request was called: the engine holds state for the stream
	sentHeaders bool  // a final (non-1xx) response header block was queued
	blocked     bool  // a write found no window: Handler.Writable is due when it grows
	sendWindow  int64 // what we may still send (section 6.9.1)
	sentData    bool  // DATA went out on the stream since the peer's last WINDOW_UPDATE for it (defence.go)
	recvWindow  int64 // what the peer may still send before our next WINDOW_UPDATE
	recvUnacked int64 // body bytes consumed but not yet granted back
	length      int64 // content-length, -1 when absent (section 8.1.1)
	received    int64 // body bytes received
}

// peerEnded reports whether the peer sent END_STREAM on s.
func (s *Stream) peerEnded() bool { return s.state == stateHalfClosedRemote }

// localEnded reports whether we sent END_STREAM on s.
func (s *Stream) localEnded() bool { return s.state == stateHalfClosedLocal }

// streamTable maps stream identifiers to slots: open addressing with linear
// probing over a power-of-two array at least twice the pool's size, with
// backward-shift deletion (no tombstones). Client stream ids are odd and
// increase, so id>>1 spreads them without a hash. No map: a lookup is a
// few loads and never allocates.
type streamTable struct {
	ids   []uint32 // 0 = empty
	slots []int32
	mask  uint32
}

func (t *streamTable) init(n int) {
	size := 4
	for size < 2*n {
		size <<= 1
	}
	if cap(t.ids) >= size {
		t.ids, t.slots = t.ids[:size], t.slots[:size]
		clear(t.ids)
	} else {
		t.ids, t.slots = make([]uint32, size), make([]int32, size)
	}
	t.mask = uint32(size - 1)
}

// get returns the slot of stream id, or -1.
func (t *streamTable) get(id uint32) int {
	for i := (id >> 1) & t.mask; ; i = (i + 1) & t.mask {
		switch t.ids[i] {
		case id:
			return int(t.slots[i])
		case 0:
			return -1
		}
	}
}

// put records that stream id (not present) holds slot.
func (t *streamTable) put(id uint32, slot int) {
	i := (id >> 1) & t.mask
	for t.ids[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.ids[i], t.slots[i] = id, int32(slot)
}

// del removes stream id, shifting later entries of its probe run back.
func (t *streamTable) del(id uint32) {
	i := (id >> 1) & t.mask
	for t.ids[i] != id {
		if t.ids[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.ids[j] != 0; j = (j + 1) & t.mask {
		home := (t.ids[j] >> 1) & t.mask
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.ids[i], t.slots[i] = t.ids[j], t.slots[j]
			i = j
		}
	}
	t.ids[i] = 0
}

// recentResets remembers the last streams we reset, so that frames the peer
// sent before it saw our RST_STREAM are ignored (RFC 9113 section 5.1,
// "closed") rather than answered again.
type recentResets struct {
	ids  [32]uint32
	next int
}

func (r *recentResets) add(id uint32) {
	r.ids[r.next] = id
	r.next = (r.next + 1) % len(r.ids)
}

func (r *recentResets) has(id uint32) bool {
	for _, v := range r.ids {
		if v == id {
			return true
		}
	}
	return false
}
