package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSchemaCommand checks that `gale schema` prints the committed schema.
func TestSchemaCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"schema"}, &out, &errOut); code != 0 {
		t.Fatalf("gale schema: exit %d: %s", code, errOut.String())
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "config", "gale.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("gale schema differs from config/gale.schema.json; regenerate it: go run ./cmd/gale schema > config/gale.schema.json")
	}
	if code := run([]string{"schema", "extra"}, &out, &errOut); code != 2 {
		t.Fatalf("gale schema extra: exit %d, want 2", code)
	}
}
