package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestHashPassword: the hash printed verifies the password read from
// standard input; no password, an argument or a cost out of range is a
// clear error.
func TestHashPassword(t *testing.T) {
	defer func(r interface{ Read([]byte) (int, error) }) { stdin = r }(stdin)
	var out, errOut bytes.Buffer
	stdin = strings.NewReader("correct horse\n")
	if code := run([]string{"hash-password", "--cost", "4"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	h := strings.TrimSpace(out.String())
	if err := bcrypt.CompareHashAndPassword([]byte(h), []byte("correct horse")); err != nil || !strings.HasPrefix(h, "$2a$04$") {
		t.Fatalf("hash %q: %v", h, err)
	}
	for _, c := range []struct {
		args  []string
		input string
		code  int
		msg   string
	}{
		{[]string{"hash-password"}, "", 1, "no password on standard input"},
		{[]string{"hash-password", "secret"}, "", 2, "usage: gale hash-password"},
		{[]string{"hash-password", "--cost", "40"}, "x\n", 2, "--cost must be from 4 to 16"},
		{[]string{"hash-password"}, strings.Repeat("p", 73) + "\n", 1, "at most 72 bytes"},
	} {
		out.Reset()
		errOut.Reset()
		stdin = strings.NewReader(c.input)
		if code := run(c.args, &out, &errOut); code != c.code || !strings.Contains(errOut.String(), c.msg) {
			t.Errorf("%v: exit %d %q, want %d %q", c.args, code, errOut.String(), c.code, c.msg)
		}
	}
}
