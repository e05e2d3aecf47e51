package config

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

//go:generate go run ./internal/refgen

// ReferenceFile is the committed configuration reference, relative to the
// config package's directory; `go generate ./config` rewrites it.
const ReferenceFile = "REFERENCE.md"

// Reference returns the configuration reference in Markdown, generated from
// the key tables the decoder and JSONSchema use: a section per top-level
// key, and within it a subsection per mapping directly under it (such as
// server.http2 or routes[].proxy), each with a table of its keys (by their
// dotted paths, "[]" for a list item or a map value) with their type,
// default, the values allowed and their description. Like JSONSchema, it
// leaves out keys the decoder refuses as not supported yet. The output is
// deterministic and ends with a newline.
func Reference() []byte { return reference(notSupportedYet) }

const referenceIntro = `# gale configuration reference

<!-- Generated from config/keys.go by ` + "`go generate ./config`" + `; do not edit. -->

Every key of gale's config file, generated from the key tables the config
decoder itself reads, so it cannot drift from what ` + "`gale validate`" + `
accepts. Paths are dotted; ` + "`[]`" + ` stands for an item of a list or the value
of a map. Sizes are bytes (` + "`65536`" + `) or strings with a unit (` + "`\"64KiB\"`" + `,
` + "`\"10MB\"`" + `); durations use Go syntax (` + "`\"10s\"`, `\"1m30s\"`" + `); relative paths
resolve against the config file's directory. A key that is not listed here
is an unknown key to the decoder. The same tables render the JSON Schema
(` + "`gale schema`" + `, [gale.schema.json](gale.schema.json)); the README explains
each feature at length.
`

func reference(gate map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString(referenceIntro)
	b.WriteString("\nTop-level keys:\n\n")
	top := offered(topKeys, "", gate)
	for _, k := range top {
		fmt.Fprintf(&b, "- [`%s`](#%s)\n", k.name, anchor(k.name))
		for _, s := range subsections(k, k.name, gate) {
			fmt.Fprintf(&b, "  - [`%s`](#%s)\n", s.path, anchor(s.path))
		}
	}
	for _, k := range top {
		writeSection(&b, "##", k, k.name, gate, true)
		for _, s := range subsections(k, k.name, gate) {
			writeSection(&b, "###", s.sec, s.path, gate, false)
		}
	}
	return b.Bytes()
}

// writeSection writes a heading for key k at path, its doc, and the table
// of k and the keys under it; with top, the keys of its subsections are
// left to those.
func writeSection(b *bytes.Buffer, level string, k *keySpec, path string, gate map[string]string, top bool) {
	fmt.Fprintf(b, "\n%s `%s`\n\n", level, path)
	if k.doc != "" {
		b.WriteString(k.doc + "\n\n")
	}
	b.WriteString("| key | type | default | allowed | description |\n")
	b.WriteString("|---|---|---|---|---|\n")
	row := func(k *keySpec, path string) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n",
			cell(code(path)), cell(typeText(k)), cell(defaultText(k)), cell(allowedText(k)), cell(docText(k)))
	}
	if !top {
		visitKeys(k, path, gate, row)
		return
	}
	row(k, path)
	eachChild(k, path, gate, func(c *keySpec, path string) {
		if c.typ != typeSection {
			visitKeys(c, path, gate, row)
		}
	})
}

// subsections returns the mappings directly under top-level key k at
// path, which the reference gives sections of their own.
func subsections(k *keySpec, path string, gate map[string]string) []sectionAt {
	var out []sectionAt
	eachChild(k, path, gate, func(c *keySpec, path string) {
		if c.typ == typeSection {
			out = append(out, sectionAt{c, path})
		}
	})
	return out
}

// eachChild calls visit with every key directly under key k at path (in
// each section its value may be, once), leaving out the keys gate holds.
func eachChild(k *keySpec, path string, gate map[string]string, visit func(c *keySpec, path string)) {
	seen := map[*keySpec]bool{}
	for _, r := range sectionsOf(k, path) {
		if seen[r.sec] {
			continue
		}
		seen[r.sec] = true
		for _, c := range offered(r.sec, r.path, gate) {
			visit(c, join(r.path, c.name))
		}
	}
}

// anchor is the anchor GitHub gives a heading that is a key path in a code
// span: lower case, with "." and "[]" dropped.
func anchor(path string) string {
	return strings.NewReplacer(".", "", "[", "", "]", "").Replace(strings.ToLower(path))
}

// visitKeys calls visit with key k at path, then with every key under it in
// table order: the keys of the sections its value may be (a mapping, the
// items of a list, the values of a map, an alternative of several),
// leaving out the keys gate holds. A section reached twice (a listener
// alone or in a list) is visited once, at the first path.
func visitKeys(k *keySpec, path string, gate map[string]string, visit func(k *keySpec, path string)) {
	visit(k, path)
	eachChild(k, path, gate, func(c *keySpec, path string) {
		visitKeys(c, path, gate, visit)
	})
}

// sectionAt is a section a key's value may be, and the path of its keys.
type sectionAt struct {
	sec  *keySpec
	path string
}

// sectionsOf returns the sections key k's value may be, with paths as the
// decoder and JSONSchema write them ("[]" for list items and map values).
func sectionsOf(k *keySpec, path string) []sectionAt {
	switch k.typ {
	case typeSection:
		return []sectionAt{{k, path}}
	case typeList, typeMap:
		return sectionsOf(k.item, path+"[]")
	case typeAnyOf:
		var out []sectionAt
		for _, a := range k.alts {
			out = append(out, sectionsOf(a, path)...)
		}
		return out
	}
	return nil
}

// typeText names the shape of key k's value.
func typeText(k *keySpec) string {
	switch k.typ {
	case typeString:
		return "string"
	case typeBool:
		return "boolean"
	case typeInt:
		return "integer"
	case typeSize:
		return "size"
	case typeDuration:
		return "duration"
	case typeEnum:
		if k.numbers {
			return "string or number"
		}
		return "string"
	case typeSection:
		return "mapping"
	case typeList:
		return "list of " + group(k.item)
	case typeMap:
		return "map of name to " + group(k.item)
	case typeAnyOf:
		alts := make([]string, len(k.alts))
		for i, a := range k.alts {
			alts[i] = typeText(a)
		}
		return strings.Join(alts, ", or ")
	}
	panic("config: reference: key type " + strconv.Itoa(int(k.typ)))
}

// group is typeText, parenthesised when it names alternatives.
func group(k *keySpec) string {
	if k.typ == typeAnyOf {
		return "(" + typeText(k) + ")"
	}
	return typeText(k)
}

// defaultText is key k's default as the file would write it.
func defaultText(k *keySpec) string {
	if k.def == "" {
		return ""
	}
	return code(k.def)
}

// allowedText states what the value of key k may be beyond its type:
// options, bounds, patterns, list and section constraints.
func allowedText(k *keySpec) string {
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	switch k.typ {
	case typeString:
		if k.pattern != "" {
			add("matches " + code(k.pattern))
		}
	case typeInt:
		if k.enum != nil {
			add(options(k.enum))
		} else {
			add(bounds(k.lo, k.hi, func(n int64) string { return strconv.FormatInt(n, 10) }))
		}
	case typeSize:
		add(bounds(k.lo, k.hi, func(n int64) string { return formatSize(n) }))
	case typeDuration:
		add("positive")
	case typeEnum:
		add(options(k.enum))
	case typeSection:
		if len(k.oneOf) > 0 {
			add("exactly one of " + names(k.oneOf))
		}
		if len(k.anyOf) > 0 {
			add("at least one of " + names(k.anyOf))
		}
	case typeList:
		if k.minItems > 0 {
			add(fmt.Sprintf("at least %d", k.minItems))
		}
		if k.unique {
			add("no item twice")
		}
		if k.item.typ != typeSection {
			add(allowedText(k.item))
		}
	case typeMap:
		add("names match " + code(k.pattern))
		if k.item.typ != typeSection {
			add(allowedText(k.item))
		}
	case typeAnyOf:
		for _, a := range k.alts {
			if a.typ != typeSection {
				add(allowedText(a))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// docText is key k's description, marked when the key is required, with
// the description of a list's or map's items (or of alternatives) that are
// not sections of their own.
func docText(k *keySpec) string {
	parts := []string{}
	if k.required {
		parts = append(parts, "**Required.**")
	}
	if k.doc != "" {
		parts = append(parts, k.doc)
	}
	var inner []*keySpec
	switch k.typ {
	case typeList, typeMap:
		inner = []*keySpec{k.item}
	case typeAnyOf:
		inner = k.alts
	}
	for _, i := range inner {
		if i.typ != typeSection && i.doc != "" && i.doc != k.doc {
			parts = append(parts, "Item: "+i.doc)
		}
	}
	return strings.Join(parts, " ")
}

// bounds renders an inclusive range; a bound at the type's limit is left
// open.
func bounds(lo, hi int64, format func(int64) string) string {
	if hi == math.MaxInt64 {
		return "at least " + format(lo)
	}
	return format(lo) + " to " + format(hi)
}

// options renders enumeration options as code.
func options(opts []string) string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = code(o)
	}
	return strings.Join(out, ", ")
}

// names renders key names as code.
func names(keys []string) string { return options(keys) }

// code renders s as a Markdown code span, with a longer fence when s holds
// a backtick.
func code(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// cell makes s safe inside a Markdown table cell: pipes escaped (GitHub
// reads "\|" as a pipe even inside a code span), line breaks as spaces.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
