package handlers

import (
	"gale/codec"
	"gale/config"
)

// Header field names the handlers render. Static memory: never modified.
var (
	hdrLocation      = []byte("Location")
	hdrAllow         = []byte("Allow")
	hdrCacheControl  = []byte("Cache-Control")
	valAllowReadOnly = []byte("GET, HEAD, OPTIONS")
)

// headerOps are compiled header edits, applied in the order Remove, Set,
// Add. Every name and value was converted to []byte once by Build and is
// never modified, so the slices may be put into requests and responses.
type headerOps struct {
	remove [][]byte
	set    []codec.Header
	add    []codec.Header
}

func compileHeaderOps(ops config.HeaderOps) headerOps {
	var h headerOps
	for _, name := range ops.Remove {
		h.remove = append(h.remove, []byte(name))
	}
	for _, kv := range ops.Set {
		h.set = append(h.set, codec.Header{Name: []byte(kv.Name), Value: []byte(kv.Value)})
	}
	for _, kv := range ops.Add {
		h.add = append(h.add, codec.Header{Name: []byte(kv.Name), Value: []byte(kv.Value)})
	}
	return h
}

func (h *headerOps) empty() bool {
	return len(h.remove) == 0 && len(h.set) == 0 && len(h.add) == 0
}

// apply edits hs in place (growing it only past its capacity) and returns
// the result.
func (h *headerOps) apply(hs []codec.Header) []codec.Header {
	for _, name := range h.remove {
		hs = delHeader(hs, name)
	}
	for _, f := range h.set {
		hs = delHeader(hs, f.Name)
	}
	hs = append(hs, h.set...)
	return append(hs, h.add...)
}
