package importer

import (
	"bytes"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// obj is a YAML mapping whose keys keep the order they were set in, with
// an optional comment written above it (the source of a route).
type obj struct {
	keys    []string
	vals    []any // string, int, bool, []string, *obj, []*obj, []any
	comment string
	origin  Note // where a route came from, for notes about it (not rendered)
}

func newObj() *obj { return &obj{} }

// set adds or replaces key.
func (o *obj) set(key string, v any) *obj {
	for i, k := range o.keys {
		if k == key {
			o.vals[i] = v
			return o
		}
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	return o
}

// get returns the value of key, or nil.
func (o *obj) get(key string) any {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i]
		}
	}
	return nil
}

// sub returns the mapping under key, creating it.
func (o *obj) sub(key string) *obj {
	if s, ok := o.get(key).(*obj); ok {
		return s
	}
	s := newObj()
	o.set(key, s)
	return s
}

// del removes key.
func (o *obj) del(key string) {
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			o.vals = append(o.vals[:i], o.vals[i+1:]...)
			return
		}
	}
}

// node renders v as a YAML node.
func node(v any) *yaml.Node {
	switch x := v.(type) {
	case *obj:
		n := &yaml.Node{Kind: yaml.MappingNode, HeadComment: clean(x.comment)}
		for i, k := range x.keys {
			key := str(k)
			if len(k) == 3 && k[0] >= '1' && k[0] <= '5' && strings.Trim(k, "0123456789") == "" {
				key.Tag = "!!int" // a status code (error_pages)
			}
			n.Content = append(n.Content, key, node(x.vals[i]))
		}
		if len(x.keys) > 0 && flowable(x) {
			n.Style = yaml.FlowStyle
		}
		return n
	case []*obj:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, o := range x {
			n.Content = append(n.Content, node(o))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, o := range x {
			n.Content = append(n.Content, node(o))
		}
		return n
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range x {
			n.Content = append(n.Content, str(s))
		}
		return n
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case string:
		return str(x)
	}
	panic("bug: importer cannot render a value of this type")
}

func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.ToValidUTF8(s, "\uFFFD")}
}

// clean makes text from the source safe in a YAML comment: valid UTF-8,
// one line, no control characters.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// flowable reports whether a mapping is small and flat enough to be
// written on one line ({to: ..., status: 301}).
func flowable(o *obj) bool {
	if o.comment != "" || len(o.keys) > 4 {
		return false
	}
	for _, v := range o.vals {
		switch x := v.(type) {
		case *obj, []*obj, []any:
			return false
		case string:
			if len(x) > 60 {
				return false
			}
		}
	}
	return true
}

// render writes the document o with a leading comment.
func render(o *obj, head string) ([]byte, error) {
	n := node(o)
	n.Style = 0
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}, HeadComment: strings.ToValidUTF8(head, "\uFFFD")}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
