package main

import (
	"fmt"
	"io"
	"os"

	"gale/importer"
)

const importUsage = "usage: gale import [--from nginx|caddy] [-o FILE] FILE\n"

// cmdImport converts an nginx config or a Caddyfile to gale's YAML: the
// YAML on stdout (or -o FILE), each directive not carried over on stderr
// as FILE:LINE: directive: why. Exit 0 when converted (notes or not), 1
// when the file could not be read or parsed, 2 on a usage error.
func cmdImport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("import", stderr)
	from := fs.String("from", "", "the source format, nginx or caddy (default: by the file's name, else its text)")
	out := fs.String("o", "", "write the YAML to this file instead of stdout")
	if code, ok := parseFlags(fs, args, importUsage, stdout, stderr); !ok {
		return code
	}
	rest := fs.Args()
	if len(rest) > 1 {
		// flags after the file name
		if code, ok := parseFlags(fs, rest[1:], importUsage, stdout, stderr); !ok {
			return code
		}
		rest = append(rest[:1], fs.Args()...)
	}
	if len(rest) != 1 || (*from != "" && *from != "nginx" && *from != "caddy") {
		fmt.Fprint(stderr, importUsage)
		return 2
	}
	res, err := importer.File(rest[0], importer.Format(*from))
	if err != nil {
		fmt.Fprintf(stderr, "gale import: %v\n", err)
		return 1
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, n)
	}
	if *out == "" {
		_, err = stdout.Write(res.YAML)
	} else {
		err = os.WriteFile(*out, res.YAML, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gale import: %v\n", err)
		return 1
	}
	return 0
}
