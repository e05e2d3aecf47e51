package handlers

// Path safety for static files. The static handler takes the normalised
// path (Ctx.Rest, within Ctx.Path; see normpath.go), which has no dot
// segments, empty segments, NUL or backslash left. It percent-decodes the
// remaining escapes exactly once and cleans the result lexically again
// before it touches the file system, so that these rules hold whatever
// path it is given:
//
//   - a malformed escape ("%", "%4", "%zz") or a NUL byte, raw or encoded,
//     is a bad request (400);
//   - an encoded slash (%2F) or backslash (%5C), or a raw backslash, cannot
//     name a file under the root (404): decoding them would let one path
//     segment become several, and backslashes are separators elsewhere
//     (the normalisation refuses backslashes before this, with 400);
//   - "." segments and empty segments are dropped, ".." removes the
//     previous segment, and a ".." that would climb above the root is a bad
//     request (400), never clamped.
//
// The decoded bytes are not decoded again ("%252e" names a file called
// "%2e"), so nothing below the root is reachable by double encoding.

// appendDecodedPath appends the percent-decoded p to dst. It returns the
// status to answer with (0 for none) when p is refused.
func appendDecodedPath(dst, p []byte) ([]byte, int) {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch b {
		case '%':
			if i+2 >= len(p) {
				return dst, 400
			}
			hi, ok1 := unhex(p[i+1])
			lo, ok2 := unhex(p[i+2])
			if !ok1 || !ok2 {
				return dst, 400
			}
			b = hi<<4 | lo
			i += 2
			switch b {
			case 0:
				return dst, 400
			case '/', '\\':
				return dst, 404
			}
		case 0:
			return dst, 400
		case '\\':
			return dst, 404
		}
		dst = append(dst, b)
	}
	return dst, 0
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// cleanPath cleans the decoded path p in place (see the rules above) and
// returns the clean path, which starts with "/" and has no trailing slash
// except for the root itself. dir reports whether p named a directory
// explicitly (a trailing "/", "." or ".."). ok is false when p climbs
// above the root.
func cleanPath(p []byte) (clean []byte, dir, ok bool) {
	n := len(p)
	dir = n == 0 || p[n-1] == '/'
	w := 0 // p[:w] is the clean path so far ("" for the root)
	for i := 0; i < n; {
		for i < n && p[i] == '/' {
			i++
		}
		if i == n {
			break
		}
		j := i
		for j < n && p[j] != '/' {
			j++
		}
		seg := p[i:j]
		switch {
		case len(seg) == 1 && seg[0] == '.':
			dir = dir || j == n
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			if w == 0 {
				return nil, false, false
			}
			w--
			for w > 0 && p[w] != '/' {
				w--
			}
			dir = dir || j == n
		default:
			// i > w: at least one '/' was skipped since the last write.
			p[w] = '/'
			copy(p[w+1:], seg)
			w += 1 + len(seg)
		}
		i = j
	}
	if w == 0 {
		if n == 0 {
			return slash, true, true
		}
		p[0] = '/'
		return p[:1], true, true
	}
	return p[:w], dir, true
}

// hasHiddenSegment reports whether a clean path has a segment starting
// with "." (a dot-file or dot-directory).
func hasHiddenSegment(p []byte) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '/' && p[i+1] == '.' {
			return true
		}
	}
	return false
}
