package config

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// durationPattern matches Go duration syntax (time.ParseDuration) without
// a sign; the decoder also requires the value to be positive, which a
// pattern cannot say.
const durationPattern = `^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`

// JSONSchema returns the JSON Schema (draft-07, which yaml-language-server
// and most editors read) of the config file, generated from the key tables
// the decoder uses: every key with its type, bounds, options, default and
// description. Checks that involve several keys or the file system (a root
// that must exist, max_file_bytes at most max_bytes) are the decoder's
// alone; `gale validate` is the final word. The output is indented and
// deterministic, and ends with a newline.
func JSONSchema() []byte { return jsonSchema(notSupportedYet) }

// jsonSchema renders the schema leaving out the keys of gate (key path
// patterns, as notSupportedYet holds them), which the decoder refuses.
func jsonSchema(gate map[string]string) []byte {
	s := schemaOf(topKeys, "", gate)
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["title"] = "gale config"
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		panic("config: rendering the JSON Schema: " + err.Error())
	}
	return b.Bytes()
}

// schemaOf renders one key's value, at key path path, as a schema object.
func schemaOf(k *keySpec, path string, gate map[string]string) map[string]any {
	s := map[string]any{}
	switch k.typ {
	case typeString:
		s["type"] = "string"
		if k.pattern != "" {
			s["pattern"] = k.pattern
		}
	case typeBool:
		s["type"] = "boolean"
	case typeInt:
		s["type"] = "integer"
		if k.enum != nil {
			s["enum"] = intOptions(k.enum)
		} else {
			s["minimum"], s["maximum"] = k.lo, k.hi
		}
	case typeSize:
		s["anyOf"] = []any{
			map[string]any{"type": "integer", "minimum": k.lo, "maximum": k.hi},
			map[string]any{"type": "string", "pattern": sizePattern()},
		}
	case typeDuration:
		s["type"] = "string"
		s["pattern"] = durationPattern
	case typeEnum:
		opts := make([]any, 0, 2*len(k.enum))
		for _, o := range k.enum {
			opts = append(opts, o)
		}
		if k.numbers {
			for _, o := range k.enum {
				f, _ := strconv.ParseFloat(o, 64)
				opts = append(opts, f)
			}
		}
		s["enum"] = opts
	case typeSection:
		sectionSchema(k, path, gate, s)
	case typeList:
		s["type"] = "array"
		s["items"] = schemaOf(k.item, path+"[]", gate)
		if k.minItems > 0 {
			s["minItems"] = k.minItems
		}
		if k.unique {
			s["uniqueItems"] = true
		}
	case typeMap:
		s["type"] = []string{"object", "null"}
		s["patternProperties"] = map[string]any{k.pattern: schemaOf(k.item, path+"[]", gate)}
		s["additionalProperties"] = false
	case typeAnyOf:
		alts := make([]any, len(k.alts))
		for i, a := range k.alts {
			alts[i] = schemaOf(a, path, gate)
		}
		s["anyOf"] = alts
	}
	if k.doc != "" {
		s["description"] = k.doc
	}
	if k.def != "" {
		s["default"] = defaultValue(k)
	}
	return s
}

// sectionSchema renders a mapping of known keys at path. A section without
// required keys may be left empty (null), as the decoder allows.
func sectionSchema(k *keySpec, path string, gate map[string]string, s map[string]any) {
	props := map[string]any{}
	var required []string
	for _, c := range offered(k, path, gate) {
		kp := join(path, c.name)
		props[c.name] = schemaOf(c, kp, gate)
		if c.required {
			required = append(required, c.name)
		}
	}
	s["properties"] = props
	s["additionalProperties"] = false
	if len(required) > 0 {
		s["required"] = required
	}
	if len(k.oneOf) > 0 {
		alts := make([]any, len(k.oneOf))
		for i, name := range k.oneOf {
			alts[i] = map[string]any{"required": []string{name}}
		}
		s["oneOf"] = alts
	}
	if len(k.anyOf) > 0 {
		alts := make([]any, len(k.anyOf))
		for i, name := range k.anyOf {
			alts[i] = map[string]any{"required": []string{name}}
		}
		s["anyOf"] = alts
	}
	if len(k.together) > 0 {
		deps := map[string]any{}
		for _, name := range k.together {
			var others []string
			for _, o := range k.together {
				if o != name {
					others = append(others, o)
				}
			}
			deps[name] = others
		}
		s["dependentRequired"] = deps
	}
	if len(required) == 0 && len(k.oneOf) == 0 && len(k.anyOf) == 0 {
		s["type"] = []string{"object", "null"}
	} else {
		s["type"] = "object"
	}
}

// offered returns the keys of section k, at key path path, in table order,
// leaving out those gate holds (features the decoder refuses).
func offered(k *keySpec, path string, gate map[string]string) []*keySpec {
	out := make([]*keySpec, 0, len(k.keys))
	for _, c := range k.keys {
		if _, gated := gate[pattern(join(path, c.name))]; !gated {
			out = append(out, c)
		}
	}
	return out
}

// intOptions turns decimal strings into numbers.
func intOptions(opts []string) []any {
	out := make([]any, len(opts))
	for i, o := range opts {
		n, err := strconv.Atoi(o)
		if err != nil {
			panic("config: integer option " + o)
		}
		out[i] = n
	}
	return out
}

// sizePattern matches a size written as a string: digits, then optionally
// one space and a unit of the decoder's table.
func sizePattern() string {
	units := make([]string, 0, len(sizeUnits))
	for u := range sizeUnits {
		units = append(units, u)
	}
	slices.Sort(units)
	return "^[0-9]+( ?(" + strings.Join(units, "|") + "))?$"
}

// defaultValue returns a key's default as JSON would hold it: the YAML
// text decoded.
func defaultValue(k *keySpec) any {
	var v any
	if err := yaml.Unmarshal([]byte(k.def), &v); err != nil {
		panic("config: default of " + k.name + ": " + err.Error())
	}
	return v
}
