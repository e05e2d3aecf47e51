package hpack

// dynamicTable is the decoder's dynamic table (RFC 7541 section 2.3.2): a
// FIFO of entries, the newest at index 1. Entries' names and values live
// back to back in one byte ring, slab, whose oldest byte is at start; an
// entry may wrap around its end. The entries' positions live in a second
// ring, ents. Both grow on demand, doubling, and never beyond what the
// table's maximum size can hold: the bytes stored are below maxSize (each
// entry also counts 32 octets it does not store), and there are at most
// maxSize/32 entries. Eviction only moves the rings' starts.
type dynamicTable struct {
	slab  []byte  // entry bytes, a ring of len(slab) bytes
	start int     // offset in slab of the oldest entry's first byte
	used  int     // bytes of slab held by entries
	ents  []entry // entry positions, a ring of len(ents) slots
	first int     // slot of the oldest entry
	n     int     // entries held

	size    uint64 // the table's size (RFC 7541 section 4.1): sum of the entries' sizes
	maxSize uint64 // the table's maximum size, set by size updates (section 4.2)
}

// entry is the position of one dynamic table entry in the slab.
type entry struct {
	off      int // offset in slab of the name's first byte
	nameLen  int
	valueLen int
}

// reset empties the table and sets its maximum size, keeping the rings
// unless they are larger than that size needs.
func (t *dynamicTable) reset(maxSize uint32) {
	if uint64(len(t.slab)) > uint64(maxSize) {
		t.slab = nil
	}
	if uint64(len(t.ents)) > uint64(maxSize)/entryOverhead+1 {
		t.ents = nil
	}
	t.start, t.used, t.first, t.n, t.size = 0, 0, 0, 0, 0
	t.maxSize = uint64(maxSize)
}

// len returns the number of entries.
func (t *dynamicTable) len() int { return t.n }

// at returns the entry of dynamic index i, 1 <= i <= len(): 1 is the newest
// (RFC 7541 section 2.3.3).
func (t *dynamicTable) at(i int) entry {
	return t.ents[(t.first+t.n-i)%len(t.ents)]
}

// appendName appends e's name to dst.
func (t *dynamicTable) appendName(dst []byte, e entry) []byte {
	return t.appendBytes(dst, e.off, e.nameLen)
}

// appendValue appends e's value to dst.
func (t *dynamicTable) appendValue(dst []byte, e entry) []byte {
	return t.appendBytes(dst, e.off+e.nameLen, e.valueLen)
}

// appendBytes appends the n bytes of the ring at off (taken modulo the
// ring's length) to dst.
func (t *dynamicTable) appendBytes(dst []byte, off, n int) []byte {
	if n == 0 {
		return dst
	}
	off %= len(t.slab)
	if end := off + n; end <= len(t.slab) {
		return append(dst, t.slab[off:end]...)
	}
	dst = append(dst, t.slab[off:]...)
	return append(dst, t.slab[:off+n-len(t.slab)]...)
}

// setMaxSize applies a dynamic table size update (RFC 7541 section 4.3):
// entries are evicted, oldest first, until the table's size fits.
func (t *dynamicTable) setMaxSize(v uint32) {
	t.maxSize = uint64(v)
	for t.size > t.maxSize {
		t.evictOldest()
	}
}

// add inserts a new entry (RFC 7541 section 4.4): entries are evicted,
// oldest first, until the new one fits, and an entry larger than the
// maximum size empties the table and is not added. name and value must
// not alias the slab, since eviction may reuse the bytes of an entry the
// new one takes its name from.
func (t *dynamicTable) add(name, value []byte) {
	size := uint64(len(name)) + uint64(len(value)) + entryOverhead
	for t.n > 0 && t.size+size > t.maxSize {
		t.evictOldest()
	}
	if size > t.maxSize {
		t.clear()
		return
	}
	need := len(name) + len(value)
	if t.used+need > len(t.slab) {
		t.growSlab(t.used + need)
	}
	if t.n == len(t.ents) {
		t.growEnts()
	}
	off := 0
	if len(t.slab) > 0 { // else the entry and all others hold no bytes
		off = (t.start + t.used) % len(t.slab)
		t.put(off, name)
		t.put((off+len(name))%len(t.slab), value)
	}
	t.used += need
	t.ents[(t.first+t.n)%len(t.ents)] = entry{off: off, nameLen: len(name), valueLen: len(value)}
	t.n++
	t.size += size
}

// clear empties the table, as adding an entry larger than its maximum
// size does (RFC 7541 section 4.4).
func (t *dynamicTable) clear() {
	t.start, t.used, t.first, t.n, t.size = 0, 0, 0, 0, 0
}

// put copies b into the ring at off, wrapping at its end.
func (t *dynamicTable) put(off int, b []byte) {
	k := copy(t.slab[off:], b)
	copy(t.slab, b[k:])
}

// evictOldest removes the oldest entry.
func (t *dynamicTable) evictOldest() {
	e := t.ents[t.first]
	t.first = (t.first + 1) % len(t.ents)
	t.n--
	held := e.nameLen + e.valueLen
	if held > 0 {
		t.used -= held
		t.start = (t.start + held) % len(t.slab)
	}
	t.size -= uint64(held) + entryOverhead
	if t.n == 0 {
		t.start, t.used, t.first = 0, 0, 0
	}
}

// growSlab replaces the byte ring by one of at least need bytes, with the
// entries moved to its start in order. It doubles, but never past the
// table's maximum size, which need is always below.
func (t *dynamicTable) growSlab(need int) {
	n := max(2*len(t.slab), need, 256)
	if uint64(n) > t.maxSize {
		n = int(t.maxSize)
	}
	slab := make([]byte, n)
	if t.used > 0 {
		t.appendBytes(slab[:0], t.start, t.used)
	}
	for k := 0; k < t.n && len(t.slab) > 0; k++ {
		e := &t.ents[(t.first+k)%len(t.ents)]
		e.off = (e.off - t.start + len(t.slab)) % len(t.slab)
	}
	t.slab, t.start = slab, 0
}

// growEnts doubles the ring of entry positions, moving them to its start
// in order.
func (t *dynamicTable) growEnts() {
	ents := make([]entry, max(2*len(t.ents), 16))
	for k := 0; k < t.n; k++ {
		ents[k] = t.ents[(t.first+k)%len(t.ents)]
	}
	t.ents, t.first = ents, 0
}
