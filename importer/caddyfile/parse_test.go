package caddyfile

import (
	"strings"
	"testing"
)

// TestParse checks Caddy's syntax: sites, snippets with arguments,
// matchers, env placeholders, quotes, line continuations and blocks.
func TestParse(t *testing.T) {
	t.Setenv("UPSTREAM", "127.0.0.1:9000")
	src := `{
	email admin@example.com
}

(common) {
	header X-Site {args[0]}
	encode gzip
}

example.com, www.example.com {
	import common main
	@api path /api/*
	reverse_proxy @api {$UPSTREAM} {
		lb_policy least_conn
	}
	respond /hi "hello \"you\"" 200
	redir /old /new \
		permanent
	file_server
}

:8080 {
	respond ` + "`raw {text}`" + ` # comment
}
`
	cf, err := Parse([]byte(src), "Caddyfile", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Global) != 1 || cf.Global[0].Name != "email" {
		t.Fatalf("global %+v", cf.Global)
	}
	if len(cf.Sites) != 2 || strings.Join(cf.Sites[0].Addresses, " ") != "example.com www.example.com" {
		t.Fatalf("sites %+v", cf.Sites)
	}
	var got []string
	for _, d := range cf.Sites[0].Directives {
		got = append(got, d.Name+" "+strings.Join(d.Args, "|"))
	}
	want := []string{"header X-Site|main", "encode gzip", "@api path|/api/*", "reverse_proxy @api|127.0.0.1:9000",
		`respond /hi|hello "you"|200`, "redir /old|/new|permanent", "file_server "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rp := cf.Sites[0].Directives[3]; len(rp.Block) != 1 || rp.Block[0].Name != "lb_policy" {
		t.Fatalf("reverse_proxy block %+v", rp.Block)
	}
	if r := cf.Sites[1].Directives[0]; r.Args[0] != "raw {text}" {
		t.Fatalf("raw quote %+v", r)
	}
	for _, bad := range []string{"a {\n", "a {\n}\n}\n", "a {\nb \"x\n}"} {
		if _, err := Parse([]byte(bad), "Caddyfile", ""); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
}

// FuzzParse feeds arbitrary text to the lexer and parser: no panic, no
// endless loop, and every directive has a name and a line in the file.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"example.com {\n\tfile_server\n}\n",
		"(snip) {\n\trespond {args[0]}\n}\n:80 {\n\timport snip hi\n}\n",
		"{\n\tdebug\n}\nlocalhost\nrespond \"x\" 200\n",
		"@m {\n\tpath /a/*\n}\n",
		"a {\nb `c` \\\n d\n}",
		"import",
		"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		cf, err := Parse(data, "Caddyfile", "")
		if err != nil {
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		var check func([]*Directive)
		check = func(ds []*Directive) {
			for _, d := range ds {
				if d.Line < 1 || d.Line > lines {
					t.Fatalf("line %d out of range", d.Line)
				}
				check(d.Block)
			}
		}
		check(cf.Global)
		for _, s := range cf.Sites {
			check(s.Directives)
		}
	})
}
