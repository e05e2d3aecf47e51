package nginx

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary text to the tokenizer and parser: they must
// never panic, and a tree they accept must hold only names that are
// words (no ";", "{" or "}" unquoted) with every block closed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"server { listen 80; location / { root /srv; } }",
		`add_header X-A "a \"quoted\" value" always;`,
		"set $a 'b c'; return 200 ${a}x;",
		"# comment only\n",
		"location ~* \\.(gif|jpg)$ { expires 30d; }",
		"a {",
		"}",
		`"unterminated`,
		"a 'x'y;",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		ds, err := Parse(data, "fuzz.conf")
		if err != nil {
			return
		}
		var check func([]*Directive)
		check = func(ds []*Directive) {
			for _, d := range ds {
				if d.Name == "" && d.Line == 0 {
					t.Fatalf("directive without a name or line: %+v", d)
				}
				if d.Line < 1 || d.Line > strings.Count(string(data), "\n")+1 {
					t.Fatalf("line %d out of range", d.Line)
				}
				check(d.Block)
			}
		}
		check(ds)
	})
}

// TestParse checks the tokenizer's rules on nginx's own syntax.
func TestParse(t *testing.T) {
	ds, err := Parse([]byte("a \"x\\\"y\" 'p q' b\\;c ${v}w; # c\nblock {\n inner 1;\n}\n"), "t.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Name != "a" || strings.Join(ds[0].Args, "|") != `x"y|p q|b\;c|${v}w` {
		t.Fatalf("got %+v", ds[0])
	}
	if !ds[1].IsBlock() || ds[1].Line != 2 || len(ds[1].Block) != 1 || ds[1].Block[0].Line != 3 {
		t.Fatalf("got %+v", ds[1])
	}
	for _, bad := range []string{"a {", "}", "a \"x", "a 'x'y;", "a b", "{ }"} {
		if _, err := Parse([]byte(bad), "t.conf"); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
}
