package config

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReferenceCommitted fails when config/REFERENCE.md is not what
// Reference generates from the key tables.
func TestReferenceCommitted(t *testing.T) {
	got, err := os.ReadFile(ReferenceFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, Reference()) {
		t.Fatal("config/REFERENCE.md differs from the key tables; regenerate it: go generate ./config")
	}
}

// TestReferenceCoversEveryKey checks that every key path the schema walk
// reaches has its row in the reference, and that gated keys have none.
func TestReferenceCoversEveryKey(t *testing.T) {
	ref := string(reference(map[string]string{"server.http2": "HTTP/2"}))
	n := 0
	visitKeys(topKeys, "", nil, func(k *keySpec, path string) {
		if path == "" {
			return
		}
		n++
		row := "| " + cell(code(path)) + " |"
		has := strings.Contains(ref, "\n"+row)
		gated := path == "server.http2" || strings.HasPrefix(path, "server.http2.")
		if has == gated {
			t.Errorf("%s: row present %v, gated %v", path, has, gated)
		}
	})
	if n < 100 {
		t.Fatalf("walked %d keys, expected over 100", n)
	}
	for _, line := range strings.Split(ref, "\n") {
		if strings.HasPrefix(line, "| `") && strings.Count(regexp.MustCompile(`\\\|`).ReplaceAllString(line, ""), "|") != 6 {
			t.Errorf("a row without five cells: %s", line)
		}
	}
}
