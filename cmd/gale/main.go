// Command gale is an edge web server: static sites and reverse proxying,
// configured in one YAML file, on gnet's event loops.
//
//	gale serve -c gale.yaml     run (bare "gale" is "gale serve")
//	gale validate gale.yaml     check a config: prints "ok" or one error per line
//	gale route -c FILE METHOD URL [-H 'Name: value'] [--from ADDR]
//	                            explain which route a request takes
//	gale reload [-c FILE]       apply FILE to the running server (admin API, else SIGHUP via pid_file)
//	gale stop [-c FILE]         stop the running server gracefully (admin API, else SIGTERM via pid_file)
//	gale status [-c FILE]       the running server's version, uptime, connections (admin API)
//	gale version                print the version and VCS revision (also --version)
//	gale schema                 print the config file's JSON Schema
//	gale import [--from nginx|caddy] [-o FILE] FILE
//	                            convert an nginx config or a Caddyfile to gale YAML
//	gale file-server --root DIR --listen ADDR [--browse] [--domain NAME[,NAME...]]
//	gale reverse-proxy --from ADDR|NAME[:PORT] --to UPSTREAM[,UPSTREAM...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gale/app"
	"gale/config"
	"gale/sdnotify"
)

const usage = `usage:
  gale [serve] [-c FILE]                     run the server (default config: ./gale.yaml)
  gale validate [-c] FILE                    check a config file
  gale route -c FILE METHOD URL [-H 'Name: value']... [--from ADDR]
                                             explain which route a request would take, and why
  gale reload [-c FILE]                      apply FILE to the running server (its admin API,
                                             else SIGHUP to the pid in pid_file)
  gale stop [-c FILE]                        stop the running server gracefully and wait for it
  gale status [-c FILE] [--json]             the running server's version, uptime, connections
  gale version, gale --version               print the version and VCS revision
  gale schema                                print the config file's JSON Schema (draft-07)
  gale file-server [--root DIR] [--listen ADDR] [--browse] [--access-log PATH|-]
                   [--domain NAME[,NAME...]] serve a directory without a config file
                                             (--browse lists directories without an index file;
                                             --domain serves HTTPS with automatic certificates)
  gale reverse-proxy [--from ADDR|NAME[:PORT]] --to UPSTREAM[,UPSTREAM...]
                    [--change-host-header] [--access-log PATH|-]
                                             forward every request to the upstreams
                                             (host:port, unix:/path or http://host:port);
                                             a domain name in --from serves HTTPS with an
                                             automatic certificate
  automatic HTTPS flags (file-server --domain, reverse-proxy --from NAME):
    --http ADDR (default ":80"), --email ADDR, --ca URL|letsencrypt|letsencrypt-staging,
    --ca-root FILE, --storage DIR
  gale hash-password [--cost N] < password   print a bcrypt hash for basic_auth
  gale import [--from nginx|caddy] [-o FILE] FILE
                                             convert an nginx config or a Caddyfile to gale
                                             YAML; what is not carried over goes to stderr
  gale COMMAND -h                            a command's usage and flags
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
	} else if len(args) > 0 && isHelp(args[0]) {
		cmd, args = "help", args[1:]
	} else if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		cmd, args = "version", args[1:]
	}
	if c, ok := commands[cmd]; ok {
		return c(args, stdout, stderr)
	}
	fmt.Fprintf(stderr, "gale: unknown command %q\n%s", cmd, usage)
	return 2
}

// commands runs each subcommand with its arguments; it returns the exit
// code (see run).
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"serve":         cmdServe,
	"validate":      cmdValidate,
	"route":         cmdRoute,
	"reload":        cmdReload,
	"stop":          cmdStop,
	"status":        cmdStatus,
	"version":       cmdVersion,
	"schema":        cmdSchema,
	"file-server":   cmdFileServer,
	"reverse-proxy": cmdReverseProxy,
	"hash-password": cmdHashPassword,
	"import":        cmdImport,
	"help":          cmdHelp,
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr)
	file := fs.String("c", "", "config file to check (or give it as the argument)")
	if code, ok := parseFlags(fs, args, validateUsage, stdout, stderr); !ok {
		return code
	}
	if *file == "" && fs.NArg() == 1 {
		*file = fs.Arg(0)
	} else if *file == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, validateUsage)
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
	if code, ok := noArgs("schema", args, schemaUsage, stdout, stderr); !ok {
		return code
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
	if code, ok := parseNoArgs(fs, args, serveUsage, stdout, stderr); !ok {
		return code
	}
	var (
		cfg *config.Config
		src []byte
		err error
	)
	if *file == "" && fileExists("gale.yaml") {
		*file = "gale.yaml"
	}
	switch {
	case *file != "":
		if src, err = config.ReadFile(*file); err == nil {
			cfg, err = config.Parse(src, *file)
		}
	default:
		fmt.Fprintln(stdout, "gale: no -c and no ./gale.yaml: serving the current directory on 127.0.0.1:8080")
		cfg, err = config.ForDirectory(".", "127.0.0.1:8080")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return serve(cfg, *file, src, stdout, stderr)
}

func cmdFileServer(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("file-server", stderr)
	root := fs.String("root", ".", "directory to serve")
	listen := fs.String("listen", "", `address to listen on (default "127.0.0.1:8080"; with --domain the HTTPS address, default ":443")`)
	browse := fs.Bool("browse", false, "list directories that have no index file")
	accessLog := accessLogFlag(fs)
	q := httpsFlags(fs)
	domains := fs.String("domain", "", "serve over HTTPS with certificates obtained automatically for these names (comma-separated)")
	if code, ok := parseNoArgs(fs, args, fileServerUsage, stdout, stderr); !ok {
		return code
	}
	addr := *listen
	if addr == "" && *domains == "" {
		addr = "127.0.0.1:8080"
	}
	cfg, err := config.ForDirectory(*root, orElse(addr, "127.0.0.1:0"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cfg.Routes[0].Static.Browse = *browse
	q.Domains, q.HTTPS = splitList(*domains), addr
	return serveQuick(cfg, *domains != "", q, *accessLog, stdout, stderr)
}

// serveQuick serves cfg, the config a quick command built: over automatic
// HTTPS when auto (for q.Domains), with the access log at accessLog.
func serveQuick(cfg *config.Config, auto bool, q *config.QuickHTTPS, accessLog string, stdout, stderr io.Writer) int {
	if auto {
		if err := cfg.UseAutomatic(*q); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	useAccessLog(cfg, accessLog)
	return serve(cfg, "", nil, stdout, stderr)
}

// httpsFlags adds the flags of automatic HTTPS in the quick commands
// (besides the names, which each command takes its own way).
func httpsFlags(fs *flag.FlagSet) *config.QuickHTTPS {
	q := &config.QuickHTTPS{}
	fs.StringVar(&q.HTTP, "http", "", `with automatic HTTPS: the plain HTTP address, which answers the CA's HTTP-01 challenges and redirects to https (default ":80")`)
	fs.StringVar(&q.Email, "email", "", "with automatic HTTPS: the ACME account's contact address")
	fs.StringVar(&q.CA, "ca", "", "with automatic HTTPS: the CA's ACME directory URL, letsencrypt or letsencrypt-staging (default letsencrypt)")
	fs.StringVar(&q.CARoot, "ca-root", "", "with automatic HTTPS: PEM roots to trust for the CA's own HTTPS endpoint")
	fs.StringVar(&q.Storage, "storage", "", "with automatic HTTPS: where certificates are kept (default $STATE_DIRECTORY, else the XDG data directory)")
	return q
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// cmdReverseProxy forwards everything received on --from to the
// upstreams of --to (round-robin), with every other setting at its
// default.
func cmdReverseProxy(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("reverse-proxy", stderr)
	from := fs.String("from", "127.0.0.1:8080", "address to listen on, or a domain name (NAME or NAME:PORT) to serve over HTTPS with a certificate obtained automatically")
	to := fs.String("to", "", "upstreams, comma-separated: host:port, unix:/path or http://host:port")
	changeHost := fs.Bool("change-host-header", false, "send the upstream's host in the Host header (default: the client's, as received)")
	accessLog := accessLogFlag(fs)
	q := httpsFlags(fs)
	if code, ok := parseFlags(fs, args, reverseProxyUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 || *to == "" {
		fmt.Fprint(stderr, reverseProxyUsage)
		return 2
	}
	name, https, isName := domainFrom(*from)
	addr := *from
	if isName {
		addr = "127.0.0.1:0" // replaced by the HTTPS listeners
	}
	cfg, err := config.ForProxy(addr, splitList(*to))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cfg.Routes[0].Proxy.PreserveHost = !*changeHost
	q.Domains, q.HTTPS = []string{name}, https
	return serveQuick(cfg, isName, q, *accessLog, stdout, stderr)
}

// accessLogFlag adds --access-log to a quick command.
func accessLogFlag(fs *flag.FlagSet) *string {
	return fs.String("access-log", "", `write an access log line per request (combined format) to this file, or to stdout with "-" (default: none)`)
}

// useAccessLog turns the access log on at path ("-" is stdout; a relative
// path is taken from the working directory, as config paths are from the
// file's).
func useAccessLog(cfg *config.Config, path string) {
	if path != "" && path != "-" && !filepath.IsAbs(path) {
		path = filepath.Join(cfg.Dir, path)
	}
	cfg.AccessLog.Path = path
}

// domainFrom reads --from as a domain name to serve over HTTPS: "NAME"
// (on ":443") or "NAME:PORT", NAME a DNS name with a dot that is not an
// IP address. Anything else is a listen address.
func domainFrom(from string) (name, https string, ok bool) {
	host, port, err := net.SplitHostPort(from)
	if err != nil {
		host, port = from, "443"
	}
	if !strings.Contains(host, ".") || net.ParseIP(host) != nil || strings.ContainsAny(host, "[]:/") {
		return "", "", false
	}
	return host, ":" + port, true
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// serve runs cfg (whose YAML is src, read from file) until SIGINT or
// SIGTERM or the admin API's POST /stop; SIGHUP reloads file (when the
// server was started from one), as the admin API's POST /load applies a
// config; SIGUSR1 reopens the access log file (after logrotate moved it,
// as nginx does). It tells the service manager about each step (see
// notify). With log.format: json everything it writes is a log record,
// the startup summary and errors included.
func serve(cfg *config.Config, file string, src []byte, stdout, stderr io.Writer) int {
	log := app.NewLogger(cfg.Log, stderr)
	jsonLog := cfg.Log.Format == "json"
	if jsonLog {
		// What libraries write through the standard log package becomes
		// a record too.
		slog.SetDefault(log)
	}
	fail := func(msg string, err error) int {
		if jsonLog {
			log.Error(msg, "err", err.Error())
		} else {
			fmt.Fprintf(stderr, "gale: %v\n", err)
		}
		return 1
	}
	srv, err := app.New(cfg, log)
	if err != nil {
		return fail("cannot start", err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	lc := newLifecycle(srv, log, file, src)
	closeAdmin, err := lc.startAdmin(cfg)
	if err != nil {
		return fail("cannot start", err)
	}
	defer closeAdmin()
	runErr := make(chan error, 1)
	go func() { runErr <- srv.Run() }()
	select {
	case <-srv.Booted():
	case err := <-runErr:
		return fail("cannot start", err)
	}
	removePID, err := writePIDFile(cfg)
	if err != nil {
		log.Error("cannot write the pid file", "err", err.Error())
	} else {
		defer removePID()
	}
	printStartup(cfg, srv, log, jsonLog, stdout)
	notify(log, sdnotify.Ready)
	for {
		var sig os.Signal
		select {
		case err := <-runErr:
			if err != nil {
				return fail("server stopped", err)
			}
			return 0
		case sig = <-sigs:
		case <-lc.stop:
		}
		if sig == syscall.SIGUSR1 {
			srv.ReopenLogs()
			log.Info("access log reopened")
			continue
		}
		if sig == syscall.SIGHUP {
			lc.reloadFile()
			continue
		}
		why := "admin API"
		if sig != nil {
			why = sig.String()
		}
		stopGracefully(srv, log, why, runErr)
		return 0
	}
}

// stopGracefully stops srv (see app.Server.Stop) and waits for Run to
// return, why being what asked (a signal's name, or the admin API).
func stopGracefully(srv *app.Server, log *slog.Logger, why string, runErr <-chan error) {
	notify(log, sdnotify.Stopping)
	log.Info("stopping", "signal", why, "deadline", srv.StopTimeout().String())
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
}

// printStartup says where gale listens (the addresses it bound) and what
// it understood of the config: "gale: " lines on stdout, or with JSON logs
// one record each ("listening" with the url, "config" with the summary
// line), listeners with the addresses they bound.
func printStartup(cfg *config.Config, srv *app.Server, log *slog.Logger, jsonLog bool, stdout io.Writer) {
	for _, u := range srv.URLs() {
		if jsonLog {
			log.Info("listening", "url", u)
		} else {
			fmt.Fprintf(stdout, "gale: listening on %s\n", u)
		}
	}
	for _, line := range cfg.Summary(srv.Addrs()...) {
		if jsonLog {
			log.Info("config", "summary", line)
		} else {
			fmt.Fprintf(stdout, "gale: %s\n", line)
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
