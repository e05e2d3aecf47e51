package hpack

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// fuzzTableSizes and fuzzListBounds are what the first octet of a
// FuzzDecode input selects: small tables evict often, small bounds cut
// lists short.
var (
	fuzzTableSizes = [4]uint32{0, 64, 256, 4096}
	fuzzListBounds = [4]uint32{64, 256, 1024, 16 << 10}
)

// fuzzBlocks splits a FuzzDecode input after its first octet into header
// blocks, each prefixed by its length in one octet.
func fuzzBlocks(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := min(int(data[0]), len(data)-1)
		out = append(out, data[1:1+n])
		data = data[1+n:]
	}
	return out
}

// fuzzInput joins blocks into a FuzzDecode input; blocks longer than 255
// octets are cut.
func fuzzInput(sel byte, blocks ...[]byte) []byte {
	in := []byte{sel}
	for _, b := range blocks {
		b = b[:min(len(b), 255)]
		in = append(append(in, byte(len(b))), b...)
	}
	return in
}

func listSize(l []hpack.HeaderField) uint64 {
	n := uint64(0)
	for _, f := range l {
		n += uint64(f.Size())
	}
	return n
}

// FuzzDecode decodes a sequence of blocks with one Decoder and one x/net
// Decoder, so that their dynamic tables are compared through every later
// reference, and requires the same accept or reject and the same fields:
// all of them when the list fits the bound, else a prefix that fits and
// ends where the next field would not.
//
// Two differences are RFC 7541 section 4.2 read two ways, and end the
// sequence: x/net accepts a size update after a field while its table is
// empty, which Decode never does, and rejects a second size update at the
// start of a block while its table holds entries, which Decode accepts
// (the section has the encoder send two when the size went down and back
// up).
func FuzzDecode(f *testing.F) {
	for _, s := range [][]string{
		{"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", "be"},
		{"040c 2f73 616d 706c 652f 7061 7468", "1008 7061 7373 776f 7264 0673 6563 7265 74"},
		{"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", "8286 84be 5808 6e6f 2d63 6163 6865"},
		{"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", "8286 84be 5886 a8eb 1064 9cbf",
			"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"},
		{"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6" +
			"2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3", "4883 640e ffc1 c0bf"},
		{"3f09 40 01 61 01 62 be", "20 be"},
		{"00 84 ffffffff 00", "00 81 18 00"},
		{"ff ffffffffffffffffff 7f"},
	} {
		var blocks [][]byte
		for _, b := range s {
			blocks = append(blocks, dehex(f, b))
		}
		for sel := byte(0); sel < 16; sel += 5 {
			f.Add(fuzzInput(sel, blocks...))
		}
	}
	f.Add(fuzzInput(15, xnetEncode(f, browserRequests...)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 8<<10 {
			return
		}
		limit, maxList := fuzzTableSizes[data[0]&3], fuzzListBounds[data[0]>>2&3]
		var d Decoder
		d.Init(limit)
		x := hpack.NewDecoder(limit, nil)
		var fs []Field
		for i, block := range fuzzBlocks(data[1:]) {
			var err error
			fs, err = d.Decode(fs, block, maxList)
			want, xerr := x.DecodeFull(block)
			switch {
			case err == ErrCompression && xerr != nil:
				return
			case err == ErrCompression && d.cause == errSizeUpdateLate:
				return // x/net allows it while its table is empty
			case err != ErrCompression && xerr != nil && strings.Contains(xerr.Error(), "MUST occur at the beginning"):
				return // x/net refuses a second leading update while its table holds entries
			case err == ErrCompression || xerr != nil:
				t.Fatalf("block %d %x: Decode: %v (%v); x/net: %v", i, block, err, d.cause, xerr)
			}
			if err == nil {
				if n := listSize(want); n > uint64(maxList) {
					t.Fatalf("block %d: list of %d accepted with the bound %d", i, n, maxList)
				}
				if e := sameFields(fs, want); e != nil {
					t.Fatalf("block %d %x: %v", i, block, e)
				}
				continue
			}
			// ErrListTooLarge: a prefix that fits, cut where the next does not.
			if len(fs) >= len(want) {
				t.Fatalf("block %d: %d fields past the bound, of %d", i, len(fs), len(want))
			}
			if e := sameFields(fs, want[:len(fs)]); e != nil {
				t.Fatalf("block %d %x: %v", i, block, e)
			}
			if n := listSize(want[:len(fs)+1]); n <= uint64(maxList) {
				t.Fatalf("block %d: cut after %d fields though %d fit the bound %d", i, len(fs), n, maxList)
			}
		}
	})
}

// FuzzRoundTrip encodes fields with the Append functions and requires
// x/net's Decoder and Decode to read them back, with a table left empty.
// The input is fields separated by 0xff: a mode octet, then the name and
// value split at the first 0xfe.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("\x00content-type\xfetext/html\xff\x01x-secret\xfehunter2\xff\x02date\xfeTue, 01 Dec 2026 23:23:18 GMT\xff\x03\xfe\x04"))
	f.Add([]byte("\x02x-\x80\x81\xfe\x00\x01\x02\xff\x03\xfe\xc8\x01\xff\x00:authority\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<10 {
			return
		}
		b := AppendTableSizeZero(nil)
		var want []hpack.HeaderField
		for _, part := range bytes.Split(data, []byte{0xff}) {
			if len(part) == 0 {
				continue
			}
			mode, rest := part[0], part[1:]
			name, value, _ := bytes.Cut(rest, []byte{0xfe})
			switch mode % 4 {
			case 0:
				b = AppendField(b, name, value)
			case 1:
				b = AppendFieldNeverIndexed(b, name, value)
			case 2:
				b = AppendFieldHuffman(b, name, value)
			case 3:
				status := int(mode) * 7
				if len(rest) > 1 {
					status = int(rest[0])<<8 | int(rest[1])
				}
				b = AppendStatus(b, status)
				name, value = []byte(":status"), []byte(strconv.Itoa(status))
			}
			want = append(want, hpack.HeaderField{Name: string(name), Value: string(value), Sensitive: mode%4 == 1})
		}
		got, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
		if err != nil {
			t.Fatalf("x/net: %v for %x", err, b)
		}
		if len(got) != len(want) {
			t.Fatalf("x/net decodes %d fields; want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("x/net decodes field %d as %v; want %v", i, got[i], want[i])
			}
		}
		var d Decoder
		d.Init(4096)
		fs, err := d.Decode(nil, b, 1<<30)
		if err != nil {
			t.Fatalf("Decode: %v (%v)", err, d.cause)
		}
		if err := sameFields(fs, want); err != nil {
			t.Fatal(err)
		}
		if d.table.len() != 0 {
			t.Fatalf("the encoder left %d entries in the table", d.table.len())
		}
	})
}
