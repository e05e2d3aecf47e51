package handlers

import (
	"bytes"

	"gale/codec"
)

// Range requests (RFC 9110 section 14), parsed the way golang/go
// src/net/http/fs.go parseRange does:
//
//   - only the "bytes" unit is understood; a Range in another unit is
//     ignored (the whole representation is sent), as RFC 9110 14.2
//     requires;
//   - "a-b", "a-" (open) and "-n" (suffix) ranges; an end past the last
//     byte is clamped; a start at or past the end, and a suffix of 0,
//     overlap nothing;
//   - a malformed range set is answered 416; a set of which no range
//     overlaps the representation is answered 416 with
//     "Content-Range: bytes */N";
//   - more than maxRanges ranges, or ranges whose lengths add up to more
//     than the representation (overlapping, repeated), are ignored: the
//     whole representation is cheaper to send than to cut up.
//
// One range is answered 206 with Content-Range; several with a
// multipart/byteranges body whose parts are the ranges in the order
// asked, of the identity representation.

// maxRanges is the most ranges one request may ask for.
const maxRanges = 16

// byteRange is one satisfiable range: length bytes from start.
type byteRange struct {
	start, length int64
}

// rangeSet holds the parsed ranges of one request, on the stack.
type rangeSet struct {
	r [maxRanges]byteRange
	n int
}

// Outcomes of parseRanges.
const (
	rangesIgnore        = iota // send the whole representation (200)
	rangesOK                   // rs holds at least one range (206)
	rangesUnsatisfiable        // 416 with Content-Range: bytes */size
	rangesInvalid              // 416: the range set is malformed
)

// parseRanges parses a Range field value for a representation of size
// bytes into rs. It does not allocate.
func parseRanges(v []byte, size int64, rs *rangeSet) int {
	v = codec.TrimOWS(v)
	if len(v) < 6 || !codec.EqualFold(v[:6], "bytes=") {
		return rangesIgnore
	}
	list := v[6:]
	noOverlap := false
	var sum int64
	for len(list) > 0 {
		var ra []byte
		if i := bytes.IndexByte(list, ','); i >= 0 {
			ra, list = list[:i], list[i+1:]
		} else {
			ra, list = list, nil
		}
		ra = codec.TrimOWS(ra)
		if len(ra) == 0 {
			continue
		}
		dash := bytes.IndexByte(ra, '-')
		if dash < 0 {
			return rangesInvalid
		}
		first, last := codec.TrimOWS(ra[:dash]), codec.TrimOWS(ra[dash+1:])
		var r byteRange
		if len(first) == 0 {
			n, ok := parseDecimal(last)
			if !ok {
				return rangesInvalid
			}
			n = min(n, size)
			if n == 0 {
				noOverlap = true
				continue
			}
			r = byteRange{size - n, n}
		} else {
			start, ok := parseDecimal(first)
			if !ok {
				return rangesInvalid
			}
			end := size - 1
			if len(last) > 0 {
				if end, ok = parseDecimal(last); !ok || start > end {
					return rangesInvalid
				}
			}
			if start >= size {
				noOverlap = true
				continue
			}
			end = min(end, size-1)
			r = byteRange{start, end - start + 1}
		}
		if rs.n == maxRanges {
			return rangesIgnore
		}
		rs.r[rs.n] = r
		rs.n++
		sum += r.length
	}
	switch {
	case rs.n == 0 && noOverlap:
		return rangesUnsatisfiable
	case rs.n == 0 || sum > size:
		return rangesIgnore
	}
	return rangesOK
}

// parseDecimal parses a non-empty string of ASCII digits that fits in an
// int64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
