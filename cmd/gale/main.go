// Command gale is an edge web server: static sites and reverse proxying,
// configured in one YAML file, on gnet's event loops.
//
//	gale serve -c gale.yaml     run (bare "gale" is "gale serve")
//	gale validate -c gale.yaml  check a config: prints "ok" or one error per line
//	gale route -c FILE METHOD URL [-H 'Name: value'] [--from ADDR]
//	                            explain which route a request takes
//	gale version                print the version
//	gale schema                 print the config file's JSON Schema
//	gale file-server --root DIR --listen ADDR [--browse]
//	gale reverse-proxy --from ADDR --to UPSTREAM[,UPSTREAM...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"gale/app"
	"gale/config"
	"gale/sdnotify"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage:
  gale [serve] [-c FILE]                     run the server (default config: ./gale.yaml)
  gale validate -c FILE                      check a config file
  gale route -c FILE METHOD URL [-H 'Name: value']... [--from ADDR]
                                             explain which route a request would take, and why
  gale version                               print the version
  gale schema                                print the config file's JSON Schema (draft-07)
  gale file-server [--root DIR] [--listen ADDR] [--browse]
                                             serve a directory without a config file
                                             (--browse lists directories without an index file)
  gale reverse-proxy [--from ADDR] --to UPSTREAM[,UPSTREAM...]
                                             forward every request to the upstreams
                                             (host:port, unix:/path or http://host:port)
  gale hash-password [--cost N] < password   print a bcrypt hash for basic_auth
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests. Exit codes: 0 ok,
// 1 failure (invalid config, could not start), 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return cmdServe(args, stdout, stderr)
	case "validate":
		return cmdValidate(args, stdout, stderr)
	case "route":
		return cmdRoute(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "schema":
		return cmdSchema(args, stdout, stderr)
	case "file-server":
		return cmdFileServer(args, stdout, stderr)
	case "reverse-proxy":
		return cmdReverseProxy(args, stdout, stderr)
	case "hash-password":
		return cmdHashPassword(args, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gale: unknown command %q\n%s", cmd, usage)
		return 2
	}
}

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/panjf2000/gnet/v2" {
				v += " (gnet " + d.Version + ")"
			}
		}
		v += " " + bi.GoVersion
	}
	return "gale " + v
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr)
	file := fs.String("c", "", "config file to check")
	if err := fs.Parse(args); err != nil || *file == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "usage: gale validate -c FILE\n")
		return 2
	}
	cfg, err := config.Load(*file)
	if err == nil {
		err = app.Check(cfg)
	}
	if err != nil {
		fmt.Fprintln(stdout, err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// cmdSchema prints the JSON Schema of the config file, for editors
// (yaml-language-server reads it from a "# yaml-language-server: $schema="
// modeline).
func cmdSchema(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprint(stderr, "usage: gale schema\n")
		return 2
	}
	if _, err := stdout.Write(config.JSONSchema()); err != nil {
		fmt.Fprintf(stderr, "gale: %v\n", err)
		return 1
	}
	return 0
}

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", stderr)
	file := fs.String("c", "", "config file (default ./gale.yaml if present, else serve the current directory on 127.0.0.1:8080)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var (
		cfg *config.Config
		err error
	)
	switch {
	case *file != "":
		cfg, err = config.Load(*file)
	case fileExists("gale.yaml"):
		*file = "gale.yaml"
		cfg, err = config.Load(*file)
	default:
		fmt.Fprintln(stdout, "gale: no -c and no ./gale.yaml: serving the current directory on 127.0.0.1:8080")
		cfg, err = config.ForDirectory(".", "127.0.0.1:8080")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return serve(cfg, *file, stdout, stderr)
}

func cmdFileServer(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("file-server", stderr)
	root := fs.String("root", ".", "directory to serve")
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	browse := fs.Bool("browse", false, "list directories that have no index file")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cfg, err := config.ForDirectory(*root, *listen)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cfg.Routes[0].Static.Browse = *browse
	return serve(cfg, "", stdout, stderr)
}

// cmdReverseProxy forwards everything received on --from to the
// upstreams of --to (round-robin), with every other setting at its
// default.
func cmdReverseProxy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("reverse-proxy", stderr)
	from := fs.String("from", "127.0.0.1:8080", "address to listen on")
	to := fs.String("to", "", "upstreams, comma-separated: host:port, unix:/path or http://host:port")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *to == "" {
		fmt.Fprint(stderr, "usage: gale reverse-proxy [--from ADDR] --to UPSTREAM[,UPSTREAM...]\n")
		return 2
	}
	var ups []string
	for _, u := range strings.Split(*to, ",") {
		if u = strings.TrimSpace(u); u != "" {
			ups = append(ups, u)
		}
	}
	cfg, err := config.ForProxy(*from, ups)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return serve(cfg, "", stdout, stderr)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// serve runs cfg until SIGINT or SIGTERM; SIGHUP reloads file (when the
// server was started from one), SIGUSR1 reopens the access log file (after
// logrotate moved it, as nginx does). It tells the service manager about each
// step (see notify).
func serve(cfg *config.Config, file string, stdout, stderr io.Writer) int {
	log := app.NewLogger(cfg.Log, stderr)
	srv, err := app.New(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "gale: %v\n", err)
		return 1
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-runErr:
		fmt.Fprintf(stderr, "gale: %v\n", err)
		return 1
	}
	for _, u := range srv.URLs() {
		fmt.Fprintf(stdout, "gale: listening on %s\n", u)
	}
	for _, line := range cfg.Summary() {
		fmt.Fprintf(stdout, "gale: %s\n", line)
	}
	notify(log, sdnotify.Ready)
	for {
		select {
		case err := <-runErr:
			if err != nil {
				fmt.Fprintf(stderr, "gale: %v\n", err)
				return 1
			}
			return 0
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				srv.ReopenLogs()
				log.Info("access log reopened")
				continue
			}
			if sig == syscall.SIGHUP {
				notify(log, sdnotify.Reloading)
				reload(srv, file, log)
				notify(log, sdnotify.Ready)
				continue
			}
			notify(log, sdnotify.Stopping)
			log.Info("stopping", "signal", sig.String(), "deadline", srv.StopTimeout().String())
			ctx, cancel := context.WithTimeout(context.Background(), srv.StopTimeout())
			err := srv.Stop(ctx)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				log.Warn("stop", "err", err)
			}
			select {
			case <-runErr:
			case <-time.After(5 * time.Second):
			}
			log.Info("stopped")
			return 0
		}
	}
}

// notify reports a state change to the service manager (systemd's
// Type=notify and Type=notify-reload), when $NOTIFY_SOCKET names one: ready
// once listening, reloading then ready again around a SIGHUP reload
// (whether or not the new file was taken), stopping when a stop begins.
func notify(log *slog.Logger, send func() error) {
	if err := send(); err != nil {
		log.Warn("notify the service manager", "err", err.Error())
	}
}

func reload(srv *app.Server, file string, log *slog.Logger) {
	if file == "" {
		log.Warn("reload: no config file to re-read (started without -c)")
		return
	}
	cfg, err := config.Load(file)
	if err != nil {
		srv.ReloadRejected()
		log.Error("reload: keeping the running config", "err", err.Error())
		return
	}
	notes, err := srv.Reload(cfg)
	if err != nil {
		log.Error("reload: keeping the running config", "err", err.Error())
		return
	}
	for _, n := range notes {
		log.Warn("reload: " + n)
	}
	log.Info("reloaded", "file", file, "routes", len(cfg.Routes))
}
