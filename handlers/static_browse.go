package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gale/codec"
)

// Directory listings (static.browse): for a directory named with its
// trailing slash that has no index file. HTML by default; JSON when the
// client's Accept asks for application/json only (as for error bodies).
// Entries are sorted directories first, then by name (byte order); hidden
// entries are left out unless the route allows them, and symbolic links
// are listed by what they point to (left out when the route refuses links,
// or when the target cannot be reached under the route's policy). Names
// are escaped for HTML and percent-encoded in links, so a file name can
// neither inject markup nor be read as a scheme or a query.
//
// A listing reads the directory on the event loop, like nginx's
// autoindex, and is bounded to maxListing entries; it is built per
// request and not cached.

// maxListing is the most entries a listing shows.
const maxListing = 10000

var (
	ctHTML   = []byte("text/html; charset=utf-8")
	ctJSON   = []byte("application/json; charset=utf-8")
	valCache = []byte("no-cache")
	valVaryA = []byte("Accept")
)

// listEntry is one row of a listing.
type listEntry struct {
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	IsDir   bool      `json:"is_dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// serveListing answers with the listing of the directory at the clean
// path.
func (h *staticHandler) serveListing(c *Ctx, ri *reqInfo, clean []byte) {
	rel := "."
	if len(clean) > 1 {
		rel = string(clean[1:])
	}
	f, fi, status := h.open(rel)
	if status != 0 {
		h.fail(c, status)
		return
	}
	defer f.Close()
	if !fi.IsDir() {
		h.fail(c, 404)
		return
	}
	des, err := f.ReadDir(maxListing + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		h.fail(c, 500)
		return
	}
	truncated := len(des) > maxListing
	if truncated {
		des = des[:maxListing]
	}
	h.writeListing(c, ri, clean, h.listEntries(rel, des), truncated)
}

// listEntries returns the entries of the directory rel that a listing
// shows, directories first and each group sorted by name.
func (h *staticHandler) listEntries(rel string, des []fs.DirEntry) []listEntry {
	entries := make([]listEntry, 0, len(des))
	for _, de := range des {
		if le, ok := h.listEntry(rel, de); ok {
			entries = append(entries, le)
		}
	}
	slices.SortFunc(entries, func(a, b listEntry) int {
		if a.IsDir != b.IsDir {
			if a.IsDir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return entries
}

// listEntry describes the entry de of the directory rel, and reports
// false for one the listing leaves out: a hidden name unless hidden files
// are allowed, a symbolic link the handler would not follow, and anything
// that is neither a directory nor a regular file.
func (h *staticHandler) listEntry(rel string, de fs.DirEntry) (listEntry, bool) {
	name := de.Name()
	if !h.allowHidden && strings.HasPrefix(name, ".") {
		return listEntry{}, false
	}
	info, err := de.Info()
	if err != nil {
		return listEntry{}, false
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if h.symlinks == symlinksNever {
			return listEntry{}, false
		}
		lf, lfi, st := h.open(joinRel(rel, name))
		if st != 0 {
			return listEntry{}, false
		}
		_ = lf.Close()
		info = lfi
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return listEntry{}, false
	}
	le := listEntry{Name: name, IsDir: info.IsDir(), ModTime: info.ModTime().UTC().Truncate(time.Second)}
	le.URL = url.PathEscape(name)
	if strings.Contains(name, ":") {
		le.URL = "./" + le.URL // "a:b" must not read as a scheme
	}
	if le.IsDir {
		le.URL += "/"
	} else {
		le.Size = info.Size()
	}
	return le, true
}

// writeListing answers with entries as JSON when the client asked for it
// and as HTML otherwise; truncated says the directory held more entries
// than a listing shows.
func (h *staticHandler) writeListing(c *Ctx, ri *reqInfo, clean []byte, entries []listEntry, truncated bool) {
	c.Resp.Status = 200
	if ri.acceptsJSON {
		body, _ := json.Marshal(entries)
		c.Resp.Add(codec.NameContentType, ctJSON)
		c.Resp.Body = append(body, '\n')
	} else {
		title := h.routePath + string(clean[1:])
		if len(clean) > 1 {
			title += "/"
		}
		c.Resp.Add(codec.NameContentType, ctHTML)
		c.Resp.Body = renderListing(title, entries, len(clean) > 1 || h.routePath != "/", truncated)
	}
	c.Resp.Add(codec.NameVary, valVaryA)
	c.Resp.Add(hdrCacheControl, valCache)
	c.Resp.Add(codec.NameNosniff, codec.ValueNosniff)
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// renderListing renders a listing as an HTML page. title is the decoded
// directory path; every name is escaped.
func renderListing(title string, entries []listEntry, parent, truncated bool) []byte {
	var b bytes.Buffer
	t := html.EscapeString(title)
	b.WriteString("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>Index of ")
	b.WriteString(t)
	b.WriteString("</title>\n<style>body{font-family:sans-serif;margin:2em}td,th{padding:.2em 1em;text-align:left}td.size{text-align:right}</style>\n</head>\n<body>\n<h1>Index of ")
	b.WriteString(t)
	b.WriteString("</h1>\n<table>\n<thead><tr><th>Name</th><th>Size</th><th>Last modified</th></tr></thead>\n<tbody>\n")
	if parent {
		b.WriteString("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n")
	}
	for _, e := range entries {
		name := e.Name
		if e.IsDir {
			name += "/"
		}
		b.WriteString("<tr><td><a href=\"")
		b.WriteString(html.EscapeString(e.URL))
		b.WriteString("\">")
		b.WriteString(html.EscapeString(name))
		b.WriteString("</a></td><td class=\"size\"")
		if !e.IsDir {
			b.WriteString(" title=\"")
			b.WriteString(strconv.FormatInt(e.Size, 10))
			b.WriteString(" bytes\">")
			b.WriteString(humanSize(e.Size))
		} else {
			b.WriteString(">")
		}
		b.WriteString("</td><td>")
		b.WriteString(e.ModTime.Format("2006-01-02 15:04:05 UTC"))
		b.WriteString("</td></tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if truncated {
		b.WriteString("<p>Only the first " + strconv.Itoa(maxListing) + " entries are shown.</p>\n")
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes()
}

// humanSize renders a byte count with a binary unit ("1.5 KiB").
func humanSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := "KMGTPE"
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}
