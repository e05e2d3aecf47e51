package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the expectations in testdata/*.golden")

// goldenMarker separates a golden file's YAML input from its expectation:
// the compiled config as indented JSON, or the exact error lines.
const goldenMarker = "----- expect -----\n"

// TestGolden parses each testdata/*.golden input as a config file and
// compares the outcome with the expectation after the marker. Files named
// ungated_* are parsed with no feature gate, to exercise the decoders of
// keys that are not supported yet. Run with -update to rewrite the
// expectations, then review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d golden files, expected at least 40", len(files))
	}
	absDir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".golden"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, ok := bytes.Cut(data, []byte(goldenMarker))
			if !ok {
				t.Fatalf("%s: no %q line", file, strings.TrimSpace(goldenMarker))
			}
			gate := notSupportedYet
			if strings.HasPrefix(name, "ungated_") {
				gate = nil
			}
			cfg, err := parse(input, file, gate)
			got := renderOutcome(cfg, err, file, absDir)
			if *update {
				out := append(append(slices.Clip(input), goldenMarker...), got...)
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(want) {
				t.Errorf("%s: outcome differs (run go test ./config -run TestGolden -update to rewrite)\n--- got:\n%s--- want:\n%s", file, got, want)
			}
		})
	}
}

// renderOutcome renders a parse result for a golden file: errors one per
// line with the file shown by its base name, or the config as JSON. The
// testdata directory's absolute path is shown as $DIR and an event loop
// count equal to the number of CPUs as "$NUMCPU", so expectations do not
// depend on the machine.
func renderOutcome(cfg *Config, err error, file, absDir string) string {
	var out string
	switch {
	case err != nil && cfg != nil:
		out = "BUG: both a config and an error\n"
	case err != nil:
		list, ok := err.(ErrorList)
		if !ok {
			return "BUG: error is not an ErrorList: " + err.Error() + "\n"
		}
		for _, e := range list {
			if e.File != file {
				out += "BUG: error names file " + e.File + "\n"
			}
		}
		out += strings.ReplaceAll(err.Error(), file, filepath.Base(file)) + "\n"
	default:
		var b strings.Builder
		dump(&b, reflect.ValueOf(*cfg), "", "")
		out = b.String() + "\n"
	}
	return strings.ReplaceAll(out, absDir, "$DIR")
}

// dump writes v as indented JSON, keeping struct field order, rendering
// durations in Go syntax and maps with sorted keys. Nil pointers, slices
// and maps and empty header rules are left out, so that a route shows only
// its handler kind; a non-nil empty slice shows as [].
func dump(b *strings.Builder, v reflect.Value, field, indent string) {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		fmt.Fprintf(b, "%q", time.Duration(v.Int()).String())
		return
	}
	if v.Type() == reflect.TypeFor[Protocols]() {
		fmt.Fprintf(b, "%q", v.Interface().(Protocols).String())
		return
	}
	if v.Type() == reflect.TypeFor[Regex]() || v.Type() == reflect.TypeFor[Template]() {
		fmt.Fprintf(b, "%q", v.Addr().Interface().(fmt.Stringer).String())
		return
	}
	if v.Type() == reflect.TypeFor[netip.Prefix]() {
		fmt.Fprintf(b, "%q", v.Interface().(netip.Prefix).String())
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		dump(b, v.Elem(), field, indent)
	case reflect.Struct:
		b.WriteString("{")
		n := 0
		for i := range v.NumField() {
			fv := v.Field(i)
			switch fv.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map:
				if fv.IsNil() {
					continue // left out: absent
				}
			case reflect.Struct:
				if fv.IsZero() && fv.Type() != reflect.TypeFor[Pos]() {
					continue // left out: nothing set (header rules)
				}
			}
			if n > 0 {
				b.WriteString(",")
			}
			n++
			f := v.Type().Field(i)
			fmt.Fprintf(b, "\n%s  %q: ", indent, f.Name)
			dump(b, fv, f.Name, indent+"  ")
		}
		if n > 0 {
			fmt.Fprintf(b, "\n%s", indent)
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		if v.Len() == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(indent + "  ")
			dump(b, v.Index(i), "", indent+"  ")
		}
		fmt.Fprintf(b, "\n%s]", indent)
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("null")
			return
		}
		if v.Len() == 0 {
			b.WriteString("{}")
			return
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		b.WriteString("{\n")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(b, "%s  %q: ", indent, fmt.Sprint(k))
			dump(b, v.MapIndex(k), "", indent+"  ")
		}
		fmt.Fprintf(b, "\n%s}", indent)
	case reflect.String:
		var j bytes.Buffer
		enc := json.NewEncoder(&j)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v.String())
		b.Write(bytes.TrimSuffix(j.Bytes(), []byte("\n")))
	case reflect.Int, reflect.Int64:
		if field == "EventLoops" && v.Int() == int64(runtime.NumCPU()) {
			b.WriteString(`"$NUMCPU"`)
			return
		}
		fmt.Fprint(b, v.Int())
	case reflect.Uint32:
		fmt.Fprint(b, v.Uint())
	case reflect.Bool:
		fmt.Fprint(b, v.Bool())
	default:
		fmt.Fprintf(b, "%q", "unexpected kind "+v.Kind().String())
	}
}
