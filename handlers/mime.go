package handlers

import "strings"

// builtinMimeTypes maps lower-case extensions (with the dot) to media
// types. Textual types get "; charset=utf-8" when compiled (see textual).
var builtinMimeTypes = map[string]string{
	// text and documents
	".html":        "text/html",
	".htm":         "text/html",
	".xhtml":       "application/xhtml+xml",
	".css":         "text/css",
	".js":          "text/javascript",
	".mjs":         "text/javascript",
	".cjs":         "text/javascript",
	".json":        "application/json",
	".jsonld":      "application/ld+json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".xml":         "application/xml",
	".xsl":         "application/xml",
	".rss":         "application/rss+xml",
	".atom":        "application/atom+xml",
	".txt":         "text/plain",
	".text":        "text/plain",
	".md":          "text/markdown",
	".markdown":    "text/markdown",
	".csv":         "text/csv",
	".tsv":         "text/tab-separated-values",
	".ics":         "text/calendar",
	".vtt":         "text/vtt",
	".yaml":        "text/yaml",
	".yml":         "text/yaml",
	".toml":        "text/plain",
	".pdf":         "application/pdf",
	".epub":        "application/epub+zip",
	// images
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".apng": "image/apng",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
	".avif": "image/avif",
	".jxl":  "image/jxl",
	".ico":  "image/x-icon",
	".bmp":  "image/bmp",
	".tif":  "image/tiff",
	".tiff": "image/tiff",
	// fonts
	".woff":  "font/woff",
	".woff2": "font/woff2",
	".ttf":   "font/ttf",
	".otf":   "font/otf",
	".eot":   "application/vnd.ms-fontobject",
	// code and archives
	".wasm": "application/wasm",
	".zip":  "application/zip",
	".gz":   "application/gzip",
	".tgz":  "application/gzip",
	".tar":  "application/x-tar",
	".bz2":  "application/x-bzip2",
	".xz":   "application/x-xz",
	".zst":  "application/zstd",
	".7z":   "application/x-7z-compressed",
	// audio and video
	".mp4":  "video/mp4",
	".m4v":  "video/mp4",
	".webm": "video/webm",
	".ogv":  "video/ogg",
	".mov":  "video/quicktime",
	".ogg":  "audio/ogg",
	".oga":  "audio/ogg",
	".opus": "audio/ogg",
	".mp3":  "audio/mpeg",
	".wav":  "audio/wav",
	".flac": "audio/flac",
	".m4a":  "audio/mp4",
	".aac":  "audio/aac",
}

// ctOctetStream is the Content-Type of files with an unknown extension.
var ctOctetStream = []byte("application/octet-stream")

// maxExtLen bounds the extensions looked up (longer ones are unknown).
const maxExtLen = 32

// mimeTable maps extensions to rendered Content-Type values. It is
// immutable after newMimeTable and safe for concurrent use; lookups do not
// allocate and return static memory.
type mimeTable struct {
	m map[string][]byte
}

// newMimeTable compiles the built-in table overlaid with extra (extension
// with or without the dot, any case -> media type).
func newMimeTable(extra map[string]string) *mimeTable {
	t := &mimeTable{m: make(map[string][]byte, len(builtinMimeTypes)+len(extra))}
	add := func(ext, typ string) {
		ext = strings.ToLower(ext)
		if !strings.HasPrefix(ext, ".") {
			ext = "." + ext
		}
		typ = strings.TrimSpace(typ)
		if ext == "." || len(ext) > maxExtLen || typ == "" {
			return
		}
		if textual(typ) {
			typ += "; charset=utf-8"
		}
		t.m[ext] = []byte(typ)
	}
	for ext, typ := range builtinMimeTypes {
		add(ext, typ)
	}
	for ext, typ := range extra {
		add(ext, typ)
	}
	return t
}

// textual reports whether a media type without parameters is text that
// gets a charset: text/*, JSON, XML, JavaScript and their +json/+xml
// relatives (SVG included).
func textual(typ string) bool {
	if strings.Contains(typ, ";") {
		return false // parameters given: used as written
	}
	t := strings.ToLower(typ)
	return strings.HasPrefix(t, "text/") ||
		strings.HasSuffix(t, "/json") || strings.HasSuffix(t, "+json") ||
		strings.HasSuffix(t, "/xml") || strings.HasSuffix(t, "+xml") ||
		strings.HasSuffix(t, "/javascript") || strings.HasSuffix(t, "/ecmascript")
}

// lookup returns the Content-Type for a file name (only its last path
// segment counts), application/octet-stream when unknown.
func (t *mimeTable) lookup(name []byte) []byte {
	dot := -1
	for i := len(name) - 1; i >= 0 && name[i] != '/'; i-- {
		if name[i] == '.' {
			dot = i
			break
		}
	}
	if dot < 0 || len(name)-dot > maxExtLen || dot == 0 || name[dot-1] == '/' {
		return ctOctetStream
	}
	var buf [maxExtLen]byte
	ext := buf[:len(name)-dot]
	for i, b := range name[dot:] {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		ext[i] = b
	}
	if ct, ok := t.m[string(ext)]; ok {
		return ct
	}
	return ctOctetStream
}
