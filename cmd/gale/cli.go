package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, versionString reads the module version from the build info.
var version = ""

// The usage line of each subcommand, printed with its flags by -h and
// --help (on stdout, exit 0) and after a usage error (on stderr, exit 2).
const (
	serveUsage        = "usage: gale [serve] [-c FILE]\n"
	validateUsage     = "usage: gale validate [-c] FILE\n"
	versionUsage      = "usage: gale version (or gale --version)\n"
	schemaUsage       = "usage: gale schema\n"
	fileServerUsage   = "usage: gale file-server [--root DIR] [--listen ADDR] [--browse] [--access-log PATH|-] [--domain NAME[,NAME...]]\n"
	reverseProxyUsage = "usage: gale reverse-proxy [--from ADDR|NAME[:PORT]] --to UPSTREAM[,UPSTREAM...] [--change-host-header] [--access-log PATH|-]\n"
	hashPasswordUsage = "usage: gale hash-password [--cost N] < password\n"
)

// isHelp reports whether a is one of the help flags.
func isHelp(a string) bool {
	return a == "-h" || a == "--help" || a == "-help"
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. On -h or --help it prints usage and the
// flags to stdout and returns (0, false); on a bad flag the flag package
// has named it on stderr, usage follows there and it returns (2, false).
// ok is true when the command should go on.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(fs, usage, stdout)
		return 0, false
	case err != nil:
		fmt.Fprint(stderr, usage)
		return 2, false
	}
	return 0, true
}

// printHelp prints usage and fs's flags with their defaults.
func printHelp(fs *flag.FlagSet, usage string, w io.Writer) {
	fmt.Fprint(w, usage)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseNoArgs is parseFlags for a command that takes flags only: an
// argument left over prints usage to stderr and returns (2, false).
func parseNoArgs(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, usage, stdout, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return 2, false
	}
	return 0, true
}

// noArgs parses the arguments of a command that takes neither flags
// (but -h) nor arguments, such as version and schema (parseNoArgs).
func noArgs(name string, args []string, usage string, stdout, stderr io.Writer) (code int, ok bool) {
	return parseNoArgs(newFlags(name, stderr), args, usage, stdout, stderr)
}

// cmdVersion prints versionString.
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if code, ok := noArgs("version", args, versionUsage, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintln(stdout, versionString())
	return 0
}

// cmdHelp prints the usage of every command.
func cmdHelp(_ []string, stdout, _ io.Writer) int {
	fmt.Fprint(stdout, usage)
	return 0
}

// versionString is what gale version prints: the version given at build
// time, else the main module's from the build info ("devel" for a build
// outside a module version, such as go build in a clone), the VCS
// revision, its time and whether the tree had changes, then Go's and
// gnet's versions.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionLine(version, bi)
}

func versionLine(ldflags string, bi *debug.BuildInfo) string {
	v := ldflags
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	if bi == nil {
		return "gale " + v
	}
	var vcs []string
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		vcs = append(vcs, "revision "+rev)
	}
	if t := set["vcs.time"]; t != "" {
		vcs = append(vcs, t)
	}
	if set["vcs.modified"] == "true" {
		vcs = append(vcs, "modified")
	}
	if len(vcs) > 0 {
		v += " (" + strings.Join(vcs, ", ") + ")"
	}
	v += " " + bi.GoVersion
	for _, d := range bi.Deps {
		if d.Path == "github.com/panjf2000/gnet/v2" {
			v += " gnet " + d.Version
		}
	}
	return "gale " + v
}
