package config

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The decoder walks the yaml.Node tree itself instead of unmarshalling
// into structs: every node carries its line and column, so every error can
// point at the exact key or value, unknown and duplicate keys are caught
// with their positions, and one pass collects all problems instead of
// stopping at the first.

const (
	maxNodes  = 100_000 // mapping entries and list items walked, aliases expanded
	maxErrors = 200     // errors collected before giving up
)

type decoder struct {
	file      string            // file name for messages, as given
	dir       string            // absolute directory relative paths resolve against
	gate      map[string]string // key pattern -> feature not supported yet
	errs      ErrorList
	budget    int  // nodes left to walk
	exhausted bool // budget ran out (reported once)
	truncated bool // errors past maxErrors were dropped
	// protoKeys are the protocols lists of the listeners, checked
	// against server.http2 once it is decoded.
	protoKeys []protocolsKey
	// autos are the listeners' tls.automatic sections, checked against
	// each other and the plain listeners once listen is decoded.
	autos []automaticRef
	// clusterScopes are the rate limits' "scope: cluster" values, checked
	// against cluster.redis once the whole file is decoded.
	clusterScopes []keyRef
	// shared is whether cluster.redis is given (decoded before listen).
	shared bool
}

// keyRef is a key's value node and its path, for a check made later.
type keyRef struct {
	node *yaml.Node
	path string
}

// entry is one key and its value in a mapping.
type entry struct {
	key, val *yaml.Node
}

// section is a decoded mapping of known keys.
type section struct {
	node    *yaml.Node            // where the mapping starts, for "missing key" errors
	path    string                // the mapping's own key path
	entries map[string]entry      // known, supported keys present
	gated   map[string]*yaml.Node // known keys present but not supported yet
	// suggested holds the known keys that an unknown key was taken for a
	// typo of; they are not reported missing as well.
	suggested map[string]bool
}

// get returns the value of key name, or nil when absent.
func (s *section) get(name string) *yaml.Node {
	if s == nil {
		return nil
	}
	if e, ok := s.entries[name]; ok {
		return e.val
	}
	return nil
}

// has reports whether key name is present, supported or not.
func (s *section) has(name string) bool {
	if s == nil {
		return false
	}
	_, ok := s.entries[name]
	return ok || s.gated[name] != nil
}

// missing reports whether a required key name should be reported missing:
// it is absent, and no unknown key looked like a typo of it.
func (s *section) missing(name string) bool {
	return !s.has(name) && !s.suggested[name]
}

// required returns the value of the required key name of s (at path), or
// nil, having said it is missing (e.g. followed by example) unless a
// misspelling of it was already named.
func (d *decoder) required(s *section, path, name, example string) *yaml.Node {
	v := s.get(name)
	if v == nil && s.missing(name) {
		d.errorf(s.node, join(path, name), "missing required key; e.g. %s", example)
	}
	return v
}

// key returns the key node of name, or nil when absent.
func (s *section) key(name string) *yaml.Node {
	if s == nil {
		return nil
	}
	if k := s.gated[name]; k != nil {
		return k
	}
	return s.entries[name].key
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	if len(d.errs) >= maxErrors {
		d.truncated = true
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Col: n.Column, Key: path, Msg: fmt.Sprintf(format, args...)})
}

// result returns the errors sorted by position, with a last line saying
// so when some were left out; nil when there were none.
func (d *decoder) result() ErrorList {
	if len(d.errs) == 0 {
		return nil
	}
	d.errs.sort()
	if d.truncated {
		last := d.errs[len(d.errs)-1]
		d.errs = append(d.errs, &Error{File: d.file, Line: last.Line, Col: last.Col,
			Msg: fmt.Sprintf("too many errors; the first %d found are shown", maxErrors)})
	}
	return d.errs
}

// spend takes one node from the budget and reports whether walking may go on.
func (d *decoder) spend(n *yaml.Node) bool {
	if d.budget > 0 {
		d.budget--
		return true
	}
	if !d.exhausted {
		d.exhausted = true
		d.errorf(n, "", "more than %d mapping entries and list items (after expanding aliases); stopped here", maxNodes)
	}
	return false
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what n is, for "expected X, got Y" messages: strings are
// shown quoted, other scalars by type and value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return quote(n.Value)
		case "!!null":
			return "nothing (null)"
		case "!!int":
			return "an integer (" + n.Value + ")"
		case "!!float":
			return "a number (" + n.Value + ")"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!timestamp":
			return "a timestamp (" + n.Value + ")"
		case "!!binary":
			return "binary data"
		}
		return "a value tagged " + n.Tag
	}
	return "an unexpected node"
}

// quoteHint suggests quoting when a scalar that was meant as a string was
// read as another type.
func quoteHint(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!timestamp":
			return fmt.Sprintf("; quote it to make it a string: %q", n.Value)
		}
	}
	return ""
}

// join appends a key name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index appends a list index to a path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// mapKey appends a user-chosen map key to a path.
func mapKey(path, key string) string {
	return path + "[" + strconv.Quote(key) + "]"
}

var indexRE = regexp.MustCompile(`\[[0-9]+\]`)

// pattern turns a key path into its gate pattern: "routes[3].proxy" ->
// "routes[].proxy".
func pattern(path string) string {
	return indexRE.ReplaceAllString(path, "[]")
}

// eachKey calls each with every entry of the mapping n (at path) whose key
// is a string: the entry, its path and the key; str has named the others.
func (d *decoder) eachKey(n *yaml.Node, path string, each func(e entry, p, key string)) {
	list, _ := d.pairs(n, path)
	for _, e := range list {
		p := mapKey(path, e.key.Value)
		if key, ok := d.str(e.key, p); ok {
			each(e, p, key)
		}
	}
}

// pairs returns the entries of mapping n in file order. A null value is an
// empty mapping. Merge keys ("<<: *base") are expanded: explicit keys win
// over merged ones, and earlier merge sources over later ones. Duplicate
// explicit keys are reported. ok is false when n is not a mapping.
func (d *decoder) pairs(n *yaml.Node, path string) (out []entry, ok bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return nil, false
	}
	if t := n.ShortTag(); t != "!!map" {
		d.errorf(n, path, "unsupported tag %s; remove it", quote(t))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	var merged []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if !d.spend(k) {
			return out, false
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeSource(v, path)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, path, "expected a key name, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, mapKeyPath(path, k.Value), "duplicate key %s; first defined at line %d, column %d", quote(k.Value), first.Line, first.Column)
			continue
		}
		seen[k.Value] = k
		out = append(out, entry{k, v})
	}
	for _, e := range merged {
		if _, dup := seen[e.key.Value]; !dup {
			seen[e.key.Value] = e.key
			out = append(out, e)
		}
	}
	return out, true
}

// mapKeyPath names key k of the mapping at path: a plain name when it looks
// like one, else quoted in brackets.
func mapKeyPath(path, k string) string {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return mapKey(path, k)
		}
	}
	if k == "" {
		return mapKey(path, k)
	}
	return join(path, k)
}

// mergeSource returns the entries a merge key's value contributes.
func (d *decoder) mergeSource(v *yaml.Node, path string) []entry {
	v = deref(v)
	switch v.Kind {
	case yaml.MappingNode:
		out, _ := d.pairs(v, path)
		return out
	case yaml.SequenceNode:
		var out []entry
		for _, item := range v.Content {
			if !d.spend(item) {
				return out
			}
			if item = deref(item); item.Kind != yaml.MappingNode {
				d.errorf(item, path, "a merge (<<) takes a mapping or a list of mappings, got %s", describe(item))
				continue
			}
			got, _ := d.pairs(item, path)
			out = append(out, got...)
		}
		return out
	}
	d.errorf(v, path, "a merge (<<) takes a mapping or a list of mappings, got %s", describe(v))
	return nil
}

// section decodes mapping n at path whose keys must be among known.
// Unknown keys are reported with a suggestion; keys whose feature has not
// landed (d.gate) are reported as not supported yet and left out of the
// result, but remembered in gated. A null n is an empty section. The
// result is nil only when n is not a mapping (already reported).
func (d *decoder) section(n *yaml.Node, path string, known ...string) *section {
	list, ok := d.pairs(n, path)
	if !ok {
		return nil
	}
	s := &section{node: deref(n), path: path, entries: map[string]entry{}, gated: map[string]*yaml.Node{}, suggested: map[string]bool{}}
	for _, e := range list {
		name := e.key.Value
		kpath := mapKeyPath(path, name)
		if e.key.ShortTag() != "!!str" {
			d.errorf(e.key, kpath, "unknown key %s (expected one of: %s)", name, strings.Join(d.supported(path, known), ", "))
			continue
		}
		if !slices.Contains(known, name) {
			supported := d.supported(path, known)
			sug := suggest(name, supported)
			if sug != "" {
				s.suggested[sug] = true
			}
			d.errorf(e.key, kpath, "%s", unknownKey(name, sug, supported))
			continue
		}
		if feature, ok := d.gate[pattern(kpath)]; ok {
			d.errorf(e.key, kpath, "not supported yet: %s", feature)
			s.gated[name] = e.key
			continue
		}
		s.entries[name] = e
	}
	return s
}

// supported returns the known keys at path minus the gated ones.
func (d *decoder) supported(path string, known []string) []string {
	out := make([]string, 0, len(known))
	for _, k := range known {
		if _, gated := d.gate[pattern(join(path, k))]; !gated {
			out = append(out, k)
		}
	}
	return out
}

// unknownKey words the error for an unknown key, with the closest known
// key (sug) when one is near.
func unknownKey(name, sug string, known []string) string {
	msg := "unknown key " + quote(name)
	if sug != "" {
		msg += "; did you mean " + strconv.Quote(sug) + "?"
	}
	return msg + " (expected one of: " + strings.Join(known, ", ") + ")"
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely typo, else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	ls := strings.ToLower(s)
	for _, c := range candidates {
		dist := editDistance(ls, c)
		if dist < bestD {
			best, bestD = c, dist
		}
	}
	limit := 2
	if len(s) <= 3 {
		limit = 1
	}
	if bestD <= limit || best != "" && len(best) >= 4 && strings.Contains(ls, best) {
		return best
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// list returns the items of list n. ok is false when n is not a list.
func (d *decoder) list(n *yaml.Node, path, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of %s, got %s", what, describe(n))
		return nil, false
	}
	if t := n.ShortTag(); t != "!!seq" {
		d.errorf(n, path, "unsupported tag %s; remove it", quote(t))
		return nil, false
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, item := range n.Content {
		if !d.spend(item) {
			return out, false
		}
		out = append(out, deref(item))
	}
	return out, true
}

// nonEmptyList is list for a list that must hold an item: an empty one is
// an error, which empty words. ok is false for either error.
func (d *decoder) nonEmptyList(n *yaml.Node, path, what, empty string) ([]*yaml.Node, bool) {
	items, ok := d.list(n, path, what)
	if !ok {
		return nil, false
	}
	if len(items) == 0 {
		d.errorf(deref(n), path, "%s", empty)
		return nil, false
	}
	return items, true
}

// eachString calls each with every item of items (a list of path) that is
// a string: the item, its path and its text; str has named the others.
func (d *decoder) eachString(items []*yaml.Node, path string, each func(item *yaml.Node, ip, s string)) {
	for i, item := range items {
		ip := index(path, i)
		if s, ok := d.str(item, ip); ok {
			each(item, ip, s)
		}
	}
}

// strKey returns the string value of key name of s (at path), with its
// node and path; ok is false when the key is absent or not a string (str
// has said so).
func (d *decoder) strKey(s *section, path, name string) (v *yaml.Node, p, val string, ok bool) {
	if v = s.get(name); v == nil {
		return nil, "", "", false
	}
	p = join(path, name)
	val, ok = d.str(v, p)
	return v, p, val, ok
}

// str decodes a string. Other scalars are refused with a hint to quote
// them, so that `server_header: 1.0` does not silently become "1".
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.errorf(n, path, "expected a string, got %s%s", describe(n), quoteHint(n))
		return "", false
	}
	return n.Value, true
}

// boolean decodes true or false.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	}
	d.errorf(n, path, "expected true or false, got %s", describe(n))
	return false, false
}

// checkedStr decodes n as a string that check accepts (check returns
// what is wrong with it, or ""), reporting what it does not at path.
func (d *decoder) checkedStr(n *yaml.Node, path string, check func(string) string) (string, bool) {
	v, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if msg := check(v); msg != "" {
		d.errorf(deref(n), path, "%s", msg)
		return "", false
	}
	return v, true
}

// setCount decodes key name of s, when present, as a whole number
// within [lo, hi] into *dst.
func (d *decoder) setCount(s *section, name string, dst *int, lo, hi int64) {
	if v := s.get(name); v != nil {
		if n, ok := d.integer(v, join(s.path, name), lo, hi); ok {
			*dst = int(n)
		}
	}
}

// integer decodes a whole number within [lo, hi].
func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errorf(n, path, "expected a whole number, got %s", describe(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		d.errorf(n, path, "number %s is out of range (%d to %d)", n.Value, lo, hi)
		return 0, false
	}
	if v < lo || v > hi {
		d.errorf(n, path, "expected a number from %d to %d, got %d", lo, hi, v)
		return 0, false
	}
	return v, true
}

// size decodes a size (see ParseSize) within [lo, hi] bytes.
func (d *decoder) size(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	n = deref(n)
	var v int64
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		if err := n.Decode(&v); err != nil {
			d.errorf(n, path, "size %s is too large", n.Value)
			return 0, false
		}
		if v < 0 {
			d.errorf(n, path, "%s, got %s (sizes are not negative)", sizeExample, n.Value)
			return 0, false
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		var msg string
		if v, msg = parseSize(n.Value); msg != "" {
			d.errorf(n, path, "%s", msg)
			return 0, false
		}
	default:
		d.errorf(n, path, "%s, got %s", sizeExample, describe(n))
		return 0, false
	}
	switch {
	case v < lo && lo == 1:
		d.errorf(n, path, "must be at least 1 byte, got %s", n.Value)
		return 0, false
	case v < lo:
		d.errorf(n, path, "must be at least %s, got %s", formatSize(lo), n.Value)
		return 0, false
	case v > hi:
		d.errorf(n, path, "must be at most %s, got %s", formatSize(hi), n.Value)
		return 0, false
	}
	return v, true
}

// duration decodes a positive Go duration.
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		msg := durationExample + ", got " + describe(n)
		if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
			msg += fmt.Sprintf("; add a unit, e.g. \"%ss\"", n.Value)
		}
		d.errorf(n, path, "%s", msg)
		return 0, false
	}
	v, msg := parseDuration(n.Value)
	if msg != "" {
		d.errorf(n, path, "%s", msg)
		return 0, false
	}
	if v <= 0 {
		d.errorf(n, path, "must be positive, got %s", quote(n.Value))
		return 0, false
	}
	return v, true
}

// enum decodes a string that must be one of options.
func (d *decoder) enum(n *yaml.Node, path string, options ...string) (string, bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && slices.Contains(options, n.Value) {
		return n.Value, true
	}
	msg := "expected one of " + strings.Join(options, ", ") + ", got " + describe(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if s := suggest(n.Value, options); s != "" {
			msg += "; did you mean " + strconv.Quote(s) + "?"
		}
	}
	d.errorf(n, path, "%s", msg)
	return "", false
}
