package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// stdin is where hash-password reads the password (a variable for tests).
var stdin io.Reader = os.Stdin

// cmdHashPassword prints a bcrypt hash of the password read from the
// first line of standard input, for basic_auth.users or an htpasswd file.
// The password is not taken as an argument, which would leave it in the
// shell's history and the process list.
func cmdHashPassword(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("hash-password", stderr)
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt cost (each step doubles the time of a verification)")
	if code, ok := parseFlags(fs, args, hashPasswordUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 0 {
		fmt.Fprint(stderr, hashPasswordUsage)
		return 2
	}
	if *cost < bcrypt.MinCost || *cost > 16 {
		fmt.Fprintf(stderr, "gale hash-password: --cost must be from %d to 16, got %d\n", bcrypt.MinCost, *cost)
		return 2
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		fmt.Fprintln(stderr, "gale hash-password:", err)
		return 1
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		fmt.Fprintln(stderr, "gale hash-password: no password on standard input (e.g. echo 'secret' | gale hash-password)")
		return 1
	}
	if len(pw) > 72 {
		fmt.Fprintln(stderr, "gale hash-password: bcrypt reads at most 72 bytes of a password; use a shorter one")
		return 1
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		fmt.Fprintln(stderr, "gale hash-password:", err)
		return 1
	}
	fmt.Fprintln(stdout, string(h))
	return 0
}
