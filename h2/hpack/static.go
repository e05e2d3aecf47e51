package hpack

// staticEntries is the static table of RFC 7541 Appendix A, indexed from 1
// (entry 0 is unused so that an index needs no adjusting).
var staticEntries = [staticLen + 1][2]string{
	{},
	{":authority", ""},
	{":method", "GET"},
	{":method", "POST"},
	{":path", "/"},
	{":path", "/index.html"},
	{":scheme", "http"},
	{":scheme", "https"},
	{":status", "200"},
	{":status", "204"},
	{":status", "206"},
	{":status", "304"},
	{":status", "400"},
	{":status", "404"},
	{":status", "500"},
	{"accept-charset", ""},
	{"accept-encoding", "gzip, deflate"},
	{"accept-language", ""},
	{"accept-ranges", ""},
	{"accept", ""},
	{"access-control-allow-origin", ""},
	{"age", ""},
	{"allow", ""},
	{"authorization", ""},
	{"cache-control", ""},
	{"content-disposition", ""},
	{"content-encoding", ""},
	{"content-language", ""},
	{"content-length", ""},
	{"content-location", ""},
	{"content-range", ""},
	{"content-type", ""},
	{"cookie", ""},
	{"date", ""},
	{"etag", ""},
	{"expect", ""},
	{"expires", ""},
	{"from", ""},
	{"host", ""},
	{"if-match", ""},
	{"if-modified-since", ""},
	{"if-none-match", ""},
	{"if-range", ""},
	{"if-unmodified-since", ""},
	{"last-modified", ""},
	{"link", ""},
	{"location", ""},
	{"max-forwards", ""},
	{"proxy-authenticate", ""},
	{"proxy-authorization", ""},
	{"range", ""},
	{"referer", ""},
	{"refresh", ""},
	{"retry-after", ""},
	{"server", ""},
	{"set-cookie", ""},
	{"strict-transport-security", ""},
	{"transfer-encoding", ""},
	{"user-agent", ""},
	{"vary", ""},
	{"via", ""},
	{"www-authenticate", ""},
}

// staticLen is the number of entries of the static table; dynamic table
// indices start after it (RFC 7541 section 2.3.3).
const staticLen = 61

// staticFields holds the static table as Fields over one slab built at
// start-up, so that Decode hands them out without copying or allocating.
// Each slice's capacity is clipped to its length.
var staticFields = buildStaticFields()

func buildStaticFields() (t [staticLen + 1]Field) {
	n := 0
	for _, e := range staticEntries {
		n += len(e[0]) + len(e[1])
	}
	slab := make([]byte, 0, n)
	for i, e := range staticEntries[1:] {
		a := len(slab)
		slab = append(slab, e[0]...)
		b := len(slab)
		slab = append(slab, e[1]...)
		c := len(slab)
		t[i+1] = Field{Name: slab[a:b:b], Value: slab[b:c:c]}
	}
	return t
}

// StaticNameIndex returns the lowest index of the static table (RFC 7541
// Appendix A) whose name is name, or 0 when the table has no such name.
// Names in the table are lowercase and the comparison is exact, as HTTP/2
// requires lowercase field names (RFC 9113 section 8.2.1). It does not
// allocate.
func StaticNameIndex(name []byte) int {
	switch string(name) {
	case ":authority":
		return 1
	case ":method":
		return 2
	case ":path":
		return 4
	case ":scheme":
		return 6
	case ":status":
		return 8
	case "accept-charset":
		return 15
	case "accept-encoding":
		return 16
	case "accept-language":
		return 17
	case "accept-ranges":
		return 18
	case "accept":
		return 19
	case "access-control-allow-origin":
		return 20
	case "age":
		return 21
	case "allow":
		return 22
	case "authorization":
		return 23
	case "cache-control":
		return 24
	case "content-disposition":
		return 25
	case "content-encoding":
		return 26
	case "content-language":
		return 27
	case "content-length":
		return 28
	case "content-location":
		return 29
	case "content-range":
		return 30
	case "content-type":
		return 31
	case "cookie":
		return 32
	case "date":
		return 33
	case "etag":
		return 34
	case "expect":
		return 35
	case "expires":
		return 36
	case "from":
		return 37
	case "host":
		return 38
	case "if-match":
		return 39
	case "if-modified-since":
		return 40
	case "if-none-match":
		return 41
	case "if-range":
		return 42
	case "if-unmodified-since":
		return 43
	case "last-modified":
		return 44
	case "link":
		return 45
	case "location":
		return 46
	case "max-forwards":
		return 47
	case "proxy-authenticate":
		return 48
	case "proxy-authorization":
		return 49
	case "range":
		return 50
	case "referer":
		return 51
	case "refresh":
		return 52
	case "retry-after":
		return 53
	case "server":
		return 54
	case "set-cookie":
		return 55
	case "strict-transport-security":
		return 56
	case "transfer-encoding":
		return 57
	case "user-agent":
		return 58
	case "vary":
		return 59
	case "via":
		return 60
	case "www-authenticate":
		return 61
	}
	return 0
}

// huffmanCodes is the Huffman code of RFC 7541 Appendix B: for each symbol
// (the 256 octets, then EOS) its code, right-aligned, and its length in
// bits.
var huffmanCodes = [257]struct {
	code uint32
	bits uint8
}{
	{0x1ff8, 13}, {0x7fffd8, 23}, {0xfffffe2, 28}, {0xfffffe3, 28}, // 0
	{0xfffffe4, 28}, {0xfffffe5, 28}, {0xfffffe6, 28}, {0xfffffe7, 28}, // 4
	{0xfffffe8, 28}, {0xffffea, 24}, {0x3ffffffc, 30}, {0xfffffe9, 28}, // 8
	{0xfffffea, 28}, {0x3ffffffd, 30}, {0xfffffeb, 28}, {0xfffffec, 28}, // 12
	{0xfffffed, 28}, {0xfffffee, 28}, {0xfffffef, 28}, {0xffffff0, 28}, // 16
	{0xffffff1, 28}, {0xffffff2, 28}, {0x3ffffffe, 30}, {0xffffff3, 28}, // 20
	{0xffffff4, 28}, {0xffffff5, 28}, {0xffffff6, 28}, {0xffffff7, 28}, // 24
	{0xffffff8, 28}, {0xffffff9, 28}, {0xffffffa, 28}, {0xffffffb, 28}, // 28
	{0x14, 6}, {0x3f8, 10}, {0x3f9, 10}, {0xffa, 12}, // 32
	{0x1ff9, 13}, {0x15, 6}, {0xf8, 8}, {0x7fa, 11}, // 36
	{0x3fa, 10}, {0x3fb, 10}, {0xf9, 8}, {0x7fb, 11}, // 40
	{0xfa, 8}, {0x16, 6}, {0x17, 6}, {0x18, 6}, // 44
	{0x0, 5}, {0x1, 5}, {0x2, 5}, {0x19, 6}, // 48
	{0x1a, 6}, {0x1b, 6}, {0x1c, 6}, {0x1d, 6}, // 52
	{0x1e, 6}, {0x1f, 6}, {0x5c, 7}, {0xfb, 8}, // 56
	{0x7ffc, 15}, {0x20, 6}, {0xffb, 12}, {0x3fc, 10}, // 60
	{0x1ffa, 13}, {0x21, 6}, {0x5d, 7}, {0x5e, 7}, // 64
	{0x5f, 7}, {0x60, 7}, {0x61, 7}, {0x62, 7}, // 68
	{0x63, 7}, {0x64, 7}, {0x65, 7}, {0x66, 7}, // 72
	{0x67, 7}, {0x68, 7}, {0x69, 7}, {0x6a, 7}, // 76
	{0x6b, 7}, {0x6c, 7}, {0x6d, 7}, {0x6e, 7}, // 80
	{0x6f, 7}, {0x70, 7}, {0x71, 7}, {0x72, 7}, // 84
	{0xfc, 8}, {0x73, 7}, {0xfd, 8}, {0x1ffb, 13}, // 88
	{0x7fff0, 19}, {0x1ffc, 13}, {0x3ffc, 14}, {0x22, 6}, // 92
	{0x7ffd, 15}, {0x3, 5}, {0x23, 6}, {0x4, 5}, // 96
	{0x24, 6}, {0x5, 5}, {0x25, 6}, {0x26, 6}, // 100
	{0x27, 6}, {0x6, 5}, {0x74, 7}, {0x75, 7}, // 104
	{0x28, 6}, {0x29, 6}, {0x2a, 6}, {0x7, 5}, // 108
	{0x2b, 6}, {0x76, 7}, {0x2c, 6}, {0x8, 5}, // 112
	{0x9, 5}, {0x2d, 6}, {0x77, 7}, {0x78, 7}, // 116
	{0x79, 7}, {0x7a, 7}, {0x7b, 7}, {0x7ffe, 15}, // 120
	{0x7fc, 11}, {0x3ffd, 14}, {0x1ffd, 13}, {0xffffffc, 28}, // 124
	{0xfffe6, 20}, {0x3fffd2, 22}, {0xfffe7, 20}, {0xfffe8, 20}, // 128
	{0x3fffd3, 22}, {0x3fffd4, 22}, {0x3fffd5, 22}, {0x7fffd9, 23}, // 132
	{0x3fffd6, 22}, {0x7fffda, 23}, {0x7fffdb, 23}, {0x7fffdc, 23}, // 136
	{0x7fffdd, 23}, {0x7fffde, 23}, {0xffffeb, 24}, {0x7fffdf, 23}, // 140
	{0xffffec, 24}, {0xffffed, 24}, {0x3fffd7, 22}, {0x7fffe0, 23}, // 144
	{0xffffee, 24}, {0x7fffe1, 23}, {0x7fffe2, 23}, {0x7fffe3, 23}, // 148
	{0x7fffe4, 23}, {0x1fffdc, 21}, {0x3fffd8, 22}, {0x7fffe5, 23}, // 152
	{0x3fffd9, 22}, {0x7fffe6, 23}, {0x7fffe7, 23}, {0xffffef, 24}, // 156
	{0x3fffda, 22}, {0x1fffdd, 21}, {0xfffe9, 20}, {0x3fffdb, 22}, // 160
	{0x3fffdc, 22}, {0x7fffe8, 23}, {0x7fffe9, 23}, {0x1fffde, 21}, // 164
	{0x7fffea, 23}, {0x3fffdd, 22}, {0x3fffde, 22}, {0xfffff0, 24}, // 168
	{0x1fffdf, 21}, {0x3fffdf, 22}, {0x7fffeb, 23}, {0x7fffec, 23}, // 172
	{0x1fffe0, 21}, {0x1fffe1, 21}, {0x3fffe0, 22}, {0x1fffe2, 21}, // 176
	{0x7fffed, 23}, {0x3fffe1, 22}, {0x7fffee, 23}, {0x7fffef, 23}, // 180
	{0xfffea, 20}, {0x3fffe2, 22}, {0x3fffe3, 22}, {0x3fffe4, 22}, // 184
	{0x7ffff0, 23}, {0x3fffe5, 22}, {0x3fffe6, 22}, {0x7ffff1, 23}, // 188
	{0x3ffffe0, 26}, {0x3ffffe1, 26}, {0xfffeb, 20}, {0x7fff1, 19}, // 192
	{0x3fffe7, 22}, {0x7ffff2, 23}, {0x3fffe8, 22}, {0x1ffffec, 25}, // 196
	{0x3ffffe2, 26}, {0x3ffffe3, 26}, {0x3ffffe4, 26}, {0x7ffffde, 27}, // 200
	{0x7ffffdf, 27}, {0x3ffffe5, 26}, {0xfffff1, 24}, {0x1ffffed, 25}, // 204
	{0x7fff2, 19}, {0x1fffe3, 21}, {0x3ffffe6, 26}, {0x7ffffe0, 27}, // 208
	{0x7ffffe1, 27}, {0x3ffffe7, 26}, {0x7ffffe2, 27}, {0xfffff2, 24}, // 212
	{0x1fffe4, 21}, {0x1fffe5, 21}, {0x3ffffe8, 26}, {0x3ffffe9, 26}, // 216
	{0xffffffd, 28}, {0x7ffffe3, 27}, {0x7ffffe4, 27}, {0x7ffffe5, 27}, // 220
	{0xfffec, 20}, {0xfffff3, 24}, {0xfffed, 20}, {0x1fffe6, 21}, // 224
	{0x3fffe9, 22}, {0x1fffe7, 21}, {0x1fffe8, 21}, {0x7ffff3, 23}, // 228
	{0x3fffea, 22}, {0x3fffeb, 22}, {0x1ffffee, 25}, {0x1ffffef, 25}, // 232
	{0xfffff4, 24}, {0xfffff5, 24}, {0x3ffffea, 26}, {0x7ffff4, 23}, // 236
	{0x3ffffeb, 26}, {0x7ffffe6, 27}, {0x3ffffec, 26}, {0x3ffffed, 26}, // 240
	{0x7ffffe7, 27}, {0x7ffffe8, 27}, {0x7ffffe9, 27}, {0x7ffffea, 27}, // 244
	{0x7ffffeb, 27}, {0xffffffe, 28}, {0x7ffffec, 27}, {0x7ffffed, 27}, // 248
	{0x7ffffee, 27}, {0x7ffffef, 27}, {0x7fffff0, 27}, {0x3ffffee, 26}, // 252
	{0x3fffffff, 30}, // 256
}
