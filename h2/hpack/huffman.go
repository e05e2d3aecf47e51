package hpack

// Huffman decoding (RFC 7541 section 5.2) runs a finite automaton over the
// input four bits at a time, as nghttp2 and h2o do. Its states are the 256
// internal nodes of the code tree of Appendix B (state 0 is the root). From
// any state, four bits complete at most one symbol, because the shortest
// code is five bits long; so each transition emits at most one octet, and
// decoding costs two table lookups per input octet and no branch per bit.
//
// A transition fails when it completes EOS, which a string must not contain.
// A state accepts when the bits read since the last symbol are all ones and
// at most seven: those are the only valid padding, so a string is valid
// exactly when it ends in an accepting state.

// huffmanState is one transition of the decoding automaton.
type huffmanState struct {
	next  uint8 // the state after the four bits
	sym   uint8 // the octet completed on the way, when flags has huffEmit
	flags uint8
}

const (
	huffEmit   = 1 << iota // the transition completes the symbol sym
	huffFail               // the transition completes EOS: the string is invalid
	huffAccept             // the state reached may end a string (padding of at most seven ones)
)

// huffmanTable holds the automaton's transitions, by state and then by the
// next four bits of input, most significant first.
var huffmanTable = buildHuffmanTable()

// huffmanTree is the code tree while the table is built: for each internal
// node its two children, where a child >= 0 is another internal node and a
// child < 0 is the leaf of symbol -child-1.
type huffmanTree struct {
	child  [256][2]int
	accept [256]bool // the path from the root is all ones and at most seven bits long
	nodes  int
}

func buildHuffmanTable() *[256][16]huffmanState {
	t := &huffmanTree{nodes: 1}
	t.accept[0] = true
	for sym, c := range huffmanCodes {
		t.insert(sym, c.code, c.bits)
	}
	if t.nodes != 256 {
		panic("bug: hpack: the Huffman code does not have 256 internal nodes")
	}
	var tab [256][16]huffmanState
	for s := range tab {
		for nib := range tab[s] {
			tab[s][nib] = t.transition(s, nib)
		}
	}
	return &tab
}

// insert adds the leaf of sym, whose code is the low bits of code, creating
// the internal nodes on its path.
func (t *huffmanTree) insert(sym int, code uint32, bits uint8) {
	n := 0
	for i := int(bits) - 1; i > 0; i-- {
		b := code >> uint(i) & 1
		next := t.child[n][b]
		if next == 0 { // no node yet (the root is never anyone's child)
			next = t.nodes
			t.nodes++
			t.accept[next] = t.accept[n] && b == 1 && int(bits)-i <= 7
			t.child[n][b] = next
		}
		n = next
	}
	t.child[n][code&1] = -sym - 1
}

// transition walks four bits from state s.
func (t *huffmanTree) transition(s, nib int) huffmanState {
	var st huffmanState
	n := s
	for i := 3; i >= 0; i-- {
		c := t.child[n][nib>>uint(i)&1]
		if c >= 0 {
			n = c
			continue
		}
		if sym := -c - 1; sym == 256 {
			st.flags |= huffFail
		} else {
			st.flags |= huffEmit
			st.sym = uint8(sym)
		}
		n = 0
	}
	st.next = uint8(n)
	if t.accept[n] {
		st.flags |= huffAccept
	}
	return st
}

// huffmanAppend appends the decoding of the Huffman-coded string src to
// dst. It reports false for a string that holds EOS or ends in anything
// but padding of at most seven one bits (RFC 7541 section 5.2); dst then
// holds a prefix of the decoding.
func huffmanAppend(dst, src []byte) ([]byte, bool) {
	state, flags := uint8(0), uint8(huffAccept)
	for _, c := range src {
		e := huffmanTable[state][c>>4]
		if e.flags&huffEmit != 0 {
			dst = append(dst, e.sym)
		}
		f := e.flags
		e = huffmanTable[e.next][c&15]
		if e.flags&huffEmit != 0 {
			dst = append(dst, e.sym)
		}
		if (f|e.flags)&huffFail != 0 {
			return dst, false
		}
		state, flags = e.next, e.flags
	}
	return dst, flags&huffAccept != 0
}

// huffmanLen returns the length of the decoding of the Huffman-coded
// string src, with the validity huffmanAppend would report, and writes
// nothing.
func huffmanLen(src []byte) (int, bool) {
	n := 0
	state, flags := uint8(0), uint8(huffAccept)
	for _, c := range src {
		e := huffmanTable[state][c>>4]
		f := e.flags
		e = huffmanTable[e.next][c&15]
		n += int(f&huffEmit) + int(e.flags&huffEmit)
		if (f|e.flags)&huffFail != 0 {
			return n, false
		}
		state, flags = e.next, e.flags
	}
	return n, flags&huffAccept != 0
}

// huffmanMaxLen bounds the decoded length of n octets of Huffman code: no
// code is shorter than five bits.
func huffmanMaxLen(n int) int {
	return n * 8 / 5
}

// huffmanEncodedLen returns the length in octets of the Huffman coding of
// s, padding included.
func huffmanEncodedLen(s []byte) int {
	bits := 0
	for _, c := range s {
		bits += int(huffmanCodes[c].bits)
	}
	return (bits + 7) / 8
}

// huffmanAppendEncoded appends the Huffman coding of s to dst, padded to
// an octet with the most significant bits of EOS, that is with ones (RFC
// 7541 section 5.2).
func huffmanAppendEncoded(dst, s []byte) []byte {
	var acc uint64 // pending bits, the low n of them
	n := uint(0)
	for _, c := range s {
		h := huffmanCodes[c]
		acc = acc<<h.bits | uint64(h.code)
		n += uint(h.bits)
		for n >= 8 {
			n -= 8
			dst = append(dst, byte(acc>>n))
		}
	}
	if n > 0 {
		dst = append(dst, byte(acc<<(8-n))|byte(0xff>>n))
	}
	return dst
}
