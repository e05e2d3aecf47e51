package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"

	"gale/cache"
	"gale/codec"
)

// fileRep is the representation a static response is about to send, from
// a cache entry or from a file opened without the cache.
type fileRep struct {
	entry   *cache.Entry   // the cache entry the bytes come from; nil when uncached
	head    []byte         // pre-rendered 200 head (Response.Head); nil: render fields
	hpack   []byte         // the same head as an HTTP/2 header block (Response.HPACK); nil with head
	fields  []codec.Header // the representation's fields, as cache.Rep.Fields (Content-Length is skipped)
	etag    []byte         // strong ETag
	enc     cache.Encoding // the representation's coding
	base    []byte         // identity's ETag for the same file version (etag when enc is Identity)
	mtime   int64          // ns since the Unix epoch
	size    int64          // body length
	body    []byte         // the body in memory; nil: read it from file
	blob    *cache.Blob    // body's bytes in a sealed memfd (cache.Rep.Blob); nil for none
	file    *os.File       // open file holding the body; owned here until handed to the response
	version cache.Version  // the version of file the validators name
	vary    bool           // responses vary on Accept-Encoding
}

// Header names and values of static responses. Static memory.
var (
	hdrContentRange = []byte("Content-Range")
)

// multipartBoundary separates the parts of multipart/byteranges bodies:
// random per process, so that no file can be made to contain it.
var multipartBoundary = func() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

var ctMultipart = []byte("multipart/byteranges; boundary=" + multipartBoundary)

// openedRep describes a file opened without the cache (f, with fi its
// fstat) as fr, with its fields in Ctx.Scratch. The caller sets fr.file.
func (h *staticHandler) openedRep(c *Ctx, fr *fileRep, f *os.File, fi os.FileInfo, ct []byte) {
	mtime := fi.ModTime().UnixNano()
	*fr = fileRep{mtime: mtime, size: fi.Size(), vary: h.encodings, version: cache.VersionOf(fi)}
	m := len(c.Scratch)
	c.Scratch = cache.AppendETag(c.Scratch, mtime, fr.size)
	fr.etag = c.scratchSince(m)
	fr.base = fr.etag
	m = len(c.Scratch)
	c.Scratch = codec.AppendHTTPDate(c.Scratch, fi.ModTime())
	lm := c.scratchSince(m)
	fields := make([]codec.Header, 0, 5) // the uncached path may allocate
	if len(ct) > 0 {
		fields = append(fields, codec.Header{Name: codec.NameContentType, Value: ct})
	}
	fields = append(fields,
		codec.Header{Name: codec.NameLastModified, Value: lm},
		codec.Header{Name: codec.NameETag, Value: fr.etag},
		codec.Header{Name: codec.NameAcceptRanges, Value: codec.ValueBytes})
	if fr.vary {
		fields = append(fields, codec.Header{Name: codec.NameVary, Value: codec.ValueAcceptEncoding})
	}
	fr.fields = fields
}

// respond answers a GET or HEAD for fr: 304 or 412 by the preconditions,
// 206 or 416 by Range, else 200.
func (h *staticHandler) respond(c *Ctx, ri *reqInfo, fr *fileRep) {
	v := validators{etag: fr.etag, enc: fr.enc, base: fr.base, codings: h.codings, mtime: fr.mtime}
	switch status, held := ri.preconditions(&v); status {
	case 304:
		fr.closeFile()
		c.Resp.Status = 304
		c.Resp.Add(codec.NameETag, fr.heldETag(c, held))
		h.addCommon(c, fr)
		return
	case 412:
		fr.closeFile()
		c.Error(412)
		h.addCommon(c, fr)
		return
	}
	if ri.rng != nil && ri.rangeApplies(fr.etag, fr.mtime) && h.serveRanges(c, ri, fr) {
		return
	}
	c.Resp.Status = 200
	c.Resp.Entry = fr.entry
	if fr.head != nil {
		c.Resp.Head, c.Resp.HPACK = fr.head, fr.hpack
	} else {
		h.addFields(c, fr, false)
	}
	h.setBody(c, fr, 0, fr.size)
}

// setBody makes length bytes from offset the response's body.
func (h *staticHandler) setBody(c *Ctx, fr *fileRep, offset, length int64) {
	if fr.file == nil {
		c.Resp.Body = fr.body[offset : offset+length : offset+length]
		c.Resp.Blob, c.Resp.BlobOff = fr.blob, offset
		return
	}
	c.Resp.File, c.Resp.FileOffset, c.Resp.FileSize = fr.file, offset, length
	c.Resp.FileVersion = fr.version
	fr.file = nil
}

// addFields adds fr's fields but Content-Length (the writer renders it),
// leaving out Content-Type and Content-Encoding for multipart bodies, and
// Cache-Control.
func (h *staticHandler) addFields(c *Ctx, fr *fileRep, multipart bool) {
	for _, f := range fr.fields {
		switch {
		case sameName(f.Name, codec.NameContentLength):
			continue
		case multipart && (sameName(f.Name, codec.NameContentType) || sameName(f.Name, codec.NameContentEncoding)):
			continue
		}
		c.Resp.Headers = append(c.Resp.Headers, f)
	}
	if h.cacheControl != nil {
		c.Resp.Add(hdrCacheControl, h.cacheControl)
	}
}

// addCommon adds what every response about fr carries besides its
// status's own fields: Vary when it is negotiable, and Cache-Control.
func (h *staticHandler) addCommon(c *Ctx, fr *fileRep) {
	if fr.vary {
		c.Resp.Add(codec.NameVary, codec.ValueAcceptEncoding)
	}
	if h.cacheControl != nil {
		c.Resp.Add(hdrCacheControl, h.cacheControl)
	}
}

// heldETag returns the ETag of fr's file version in enc, for a 304 that
// tells the client to keep the representation it holds: fr's own, one
// the cache has made, or one rendered in Ctx.Scratch (its variants are
// not made yet, as after a restart).
func (fr *fileRep) heldETag(c *Ctx, enc cache.Encoding) []byte {
	if enc == fr.enc {
		return fr.etag
	}
	if fr.entry != nil {
		if r := fr.entry.Rep(enc); r != nil {
			return r.ETag
		}
	}
	m := len(c.Scratch)
	c.Scratch = cache.AppendVariantETag(c.Scratch, fr.base, enc)
	return c.scratchSince(m)
}

// field returns the value of fr's field named name, or nil.
func (fr *fileRep) field(name []byte) []byte {
	for _, f := range fr.fields {
		if sameName(f.Name, name) {
			return f.Value
		}
	}
	return nil
}

func (fr *fileRep) closeFile() {
	if fr.file != nil {
		_ = fr.file.Close()
		fr.file = nil
	}
}

// sameName compares header names that share the canonical spelling.
func sameName(a, b []byte) bool { return string(a) == string(b) }

// serveRanges answers a Range request for fr, and reports whether it did
// (false: send the whole representation).
func (h *staticHandler) serveRanges(c *Ctx, ri *reqInfo, fr *fileRep) bool {
	var rs rangeSet
	switch parseRanges(ri.rng, fr.size, &rs) {
	case rangesIgnore:
		return false
	case rangesUnsatisfiable, rangesInvalid:
		fr.closeFile()
		c.Error(416)
		m := len(c.Scratch)
		c.Scratch = append(c.Scratch, "bytes */"...)
		c.Scratch = strconv.AppendInt(c.Scratch, fr.size, 10)
		c.Resp.Add(hdrContentRange, c.scratchSince(m))
		h.addCommon(c, fr)
		return true
	}
	c.Resp.Status = 206
	c.Resp.Entry = fr.entry
	if rs.n == 1 {
		r := rs.r[0]
		h.addFields(c, fr, false)
		c.Resp.Add(hdrContentRange, appendContentRange(c, r, fr.size))
		h.setBody(c, fr, r.start, r.length)
		return true
	}
	h.addFields(c, fr, true)
	c.Resp.Add(codec.NameContentType, ctMultipart)
	ct := fr.field(codec.NameContentType)
	parts := make([]BodyPart, 0, 2*rs.n+1)
	for i, r := range rs.r[:rs.n] {
		m := len(c.Scratch)
		if i > 0 {
			c.Scratch = append(c.Scratch, '\r', '\n')
		}
		c.Scratch = append(c.Scratch, "--"+multipartBoundary+"\r\n"...)
		if ct != nil {
			c.Scratch = codec.AppendFieldLine(c.Scratch, codec.NameContentType, ct)
		}
		c.Scratch = append(c.Scratch, "Content-Range: "...)
		c.Scratch = appendRange(c.Scratch, r, fr.size)
		c.Scratch = append(c.Scratch, "\r\n\r\n"...)
		parts = append(parts, BodyPart{Data: c.scratchSince(m)})
		if fr.file == nil {
			parts = append(parts, BodyPart{Data: fr.body[r.start : r.start+r.length]})
		} else {
			parts = append(parts, BodyPart{Off: r.start, Len: r.length})
		}
	}
	parts = append(parts, BodyPart{Data: multipartEnd})
	c.Resp.Parts = parts
	if fr.file != nil {
		c.Resp.File, c.Resp.FileVersion = fr.file, fr.version
		fr.file = nil
	}
	return true
}

var multipartEnd = []byte("\r\n--" + multipartBoundary + "--\r\n")

// appendContentRange renders "bytes a-b/size" in Ctx.Scratch.
func appendContentRange(c *Ctx, r byteRange, size int64) []byte {
	m := len(c.Scratch)
	c.Scratch = appendRange(c.Scratch, r, size)
	return c.scratchSince(m)
}

func appendRange(dst []byte, r byteRange, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = strconv.AppendInt(dst, r.start, 10)
	dst = append(dst, '-')
	dst = strconv.AppendInt(dst, r.start+r.length-1, 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, size, 10)
}
