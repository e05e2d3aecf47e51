package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The soak: gale under a fixed-rate mixed load for a long time, every
// response's bytes checked, with reloads and certificate swaps along the
// way, sampled for memory, descriptors, goroutines, CPU per request and
// p99 so that a leak or a slow degradation shows (soak_load.go has the
// load, soak_sample.go the samples and the flatness verdict,
// soak_report.go the report).
//
//	go run ./bench soak -duration 1h -out bench/results/soak

const soakCmd = "soak"

// soakOptions are the soak's flags.
type soakOptions struct {
	duration    time.Duration
	rate        int           // requests per second, all kinds together
	idle        int           // idle keep-alive connections held throughout
	reload      time.Duration // SIGHUP interval
	certSwap    time.Duration // certificate file swap interval
	sample      time.Duration
	out         string // results prefix (".md", ".json", ".svg" appended); "" = none
	serverCPUs  string
	clientCPUs  string
	galeBin     string // a built gale; "" builds ./cmd/gale
	h2WithProxy bool   // the HTTP/2 kinds run (gale serves HTTP/2 with proxy routes)
}

func parseSoakFlags(args []string, stderr io.Writer) (*soakOptions, error) {
	o := &soakOptions{}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", time.Hour, "how long the load runs")
	fs.IntVar(&o.rate, "rate", 400, "requests per second, all kinds together")
	fs.IntVar(&o.idle, "idle", 2000, "idle keep-alive connections held throughout")
	fs.DurationVar(&o.reload, "reload", 30*time.Second, "interval between SIGHUP reloads")
	fs.DurationVar(&o.certSwap, "cert-swap", 5*time.Minute, "interval between certificate file swaps (each followed by a reload)")
	fs.DurationVar(&o.sample, "sample", 0, "sampling interval (0: duration/120, at least 1s)")
	fs.StringVar(&o.out, "out", "", "write the report to OUT.md, OUT.json and OUT.svg")
	fs.StringVar(&o.serverCPUs, "server-cpus", "0", "CPUs gale is pinned to")
	fs.StringVar(&o.clientCPUs, "client-cpus", "1", "CPUs the load is pinned to (this process)")
	fs.StringVar(&o.galeBin, "gale", "", "a gale binary (default: build ./cmd/gale)")
	fs.BoolVar(&o.h2WithProxy, "h2", true, "include HTTP/2 over TLS and h2c in the load")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.sample == 0 {
		o.sample = max(o.duration/120, time.Second)
	}
	if o.rate < 1 || o.duration <= 0 {
		return nil, errors.New("soak: -rate and -duration must be positive")
	}
	return o, nil
}

// runSoak runs the soak and returns the exit code: 0 when there were no
// errors and every series stayed flat.
func runSoak(args []string, stdout, stderr io.Writer) int {
	o, err := parseSoakFlags(args, stderr)
	if err != nil {
		return 2
	}
	rep, err := soak(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return 1
	}
	md := rep.markdown()
	fmt.Fprint(stdout, md)
	if o.out != "" {
		if err := rep.write(o.out, md); err != nil {
			fmt.Fprintln(stderr, "soak:", err)
			return 1
		}
	}
	if !rep.passed() {
		return 1
	}
	return 0
}

// soakEnv is what one soak run set up: gale, its upstream, its files.
type soakEnv struct {
	dir       string
	gale      *proc
	plain     string // "127.0.0.1:port"
	tlsAddr   string
	metrics   string
	cert      *benchCert
	certPaths [2]string // the certificate and key gale's config names, swapped in place
	up        *soakUpstream
	files     map[string][]byte // path -> body, as served
	tlsConf   *tls.Config
}

// soak sets up, runs the load and the sampler, and gathers the report.
func soak(o *soakOptions, log io.Writer) (*soakReport, error) {
	env, err := setUpSoak(o, log)
	if err != nil {
		return nil, err
	}
	defer env.close()
	load := newSoakLoad(env, o)
	if err := load.openIdle(o.idle); err != nil {
		return nil, err
	}
	sampler := newSoakSampler(env, load)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { load.run(stop) })
	wg.Go(func() { env.reloads(o, stop, load) })
	start := time.Now()
	fmt.Fprintf(log, "soak: %v at %d req/s, %d idle connections; sampling every %v\n", o.duration, o.rate, o.idle, o.sample)
	for tick := time.NewTicker(o.sample); time.Since(start) < o.duration; {
		<-tick.C
		s := sampler.take(time.Since(start))
		fmt.Fprintf(log, "soak: %6.0fs %8d req  rss %5.1f MiB  heap %5.1f MiB  %5d goroutines  %5d fds  p99 %6.2f ms  errors %d\n",
			s.At, s.Requests, mib(s.RSS), mib(s.Heap), s.Goroutines, s.FDs, s.P99ms, load.errorCount())
	}
	close(stop)
	wg.Wait()
	load.checkIdle()
	return &soakReport{Options: o.summary(), Samples: sampler.samples, Errors: load.errorsByKind(), Counts: load.countsByKind(), Reloads: env.reloadCount()}, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// summary is the options as the report shows them.
func (o *soakOptions) summary() map[string]string {
	return map[string]string{
		"duration": o.duration.String(), "rate": fmt.Sprint(o.rate), "idle": fmt.Sprint(o.idle),
		"reload": o.reload.String(), "cert_swap": o.certSwap.String(), "sample": o.sample.String(),
		"server_cpus": o.serverCPUs, "client_cpus": o.clientCPUs,
	}
}

// setUpSoak writes the site and the config, starts the upstream and gale.
func setUpSoak(o *soakOptions, log io.Writer) (*soakEnv, error) {
	dir, err := os.MkdirTemp("", "gale-soak-")
	if err != nil {
		return nil, err
	}
	env := &soakEnv{dir: dir, files: soakFiles()}
	if err := env.writeSite(); err != nil {
		return nil, err
	}
	if env.cert, err = writeBenchCert(filepath.Join(dir, "cert")); err != nil {
		return nil, err
	}
	env.certPaths = [2]string{filepath.Join(dir, "live-cert.pem"), filepath.Join(dir, "live-key.pem")}
	if err := env.swapCert(); err != nil {
		return nil, err
	}
	env.tlsConf = env.cert.clientConfig()
	env.tlsConf.NextProtos = []string{"http/1.1"}
	env.tlsConf.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	if env.up, err = startSoakUpstream(); err != nil {
		return nil, err
	}
	if err := env.startGale(o, log); err != nil {
		return nil, err
	}
	return env, nil
}

// soakFiles are the static files and their bodies.
func soakFiles() map[string][]byte {
	return map[string][]byte{
		"/small.txt": []byte(strings.Repeat("gale soak\n", 13)),
		"/mid.bin":   patternBytes(64<<10, 3),
		"/large.bin": patternBytes(4<<20, 5), // over max_file_bytes: streamed from disk
	}
}

// patternBytes is n bytes that show where they came from.
func patternBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed ^ byte(i>>10)
	}
	return b
}

func (env *soakEnv) writeSite() error {
	site := filepath.Join(env.dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return err
	}
	old := time.Now().Add(-time.Hour)
	for name, body := range env.files {
		p := filepath.Join(site, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, old, old); err != nil {
			return err
		}
	}
	return nil
}

// swapCert copies the certificate and key over the files gale's config
// names (a new inode each, as a deploy does), for the next reload.
func (env *soakEnv) swapCert() error {
	for i, src := range []string{env.cert.CertFile, env.cert.KeyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		tmp := env.certPaths[i] + ".new"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, env.certPaths[i]); err != nil {
			return err
		}
	}
	return nil
}

// soakConfig is gale's config for the soak.
func (env *soakEnv) soakConfig(plain, tlsPort, metrics int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen:\n  - \"127.0.0.1:%d\"\n  - address: \"127.0.0.1:%d\"\n    tls: {certificates: [{cert: %q, key: %q}]}\n",
		plain, tlsPort, env.certPaths[0], env.certPaths[1])
	fmt.Fprintf(&b, "metrics: {listen: \"127.0.0.1:%d\"}\n", metrics)
	b.WriteString("server: {event_loops: 1, reuse_port: true, timeouts: {idle: 24h}}\ncache: {max_file_bytes: 1MiB}\n")
	b.WriteString("routes:\n")
	fmt.Fprintf(&b, "  - path: /up/\n    proxy: {to: [%q], strip_prefix: true}\n", env.up.addr)
	b.WriteString("  - path: /respond\n    respond: {status: 200, body: \"soak\\n\"}\n")
	fmt.Fprintf(&b, "  - path: /\n    static: {root: %q}\n", filepath.Join(env.dir, "site"))
	return b.String()
}

func (env *soakEnv) startGale(o *soakOptions, log io.Writer) error {
	bin := o.galeBin
	if bin == "" {
		bin = filepath.Join(env.dir, "gale")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/gale").CombinedOutput(); err != nil {
			return fmt.Errorf("building gale: %v\n%s", err, out)
		}
	}
	var ports [3]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	cfg := filepath.Join(env.dir, "gale.yaml")
	if err := os.WriteFile(cfg, []byte(env.soakConfig(ports[0], ports[1], ports[2])), 0o644); err != nil {
		return err
	}
	p, err := startProc([]string{bin, "serve", "-c", cfg}, nil, o.serverCPUs, filepath.Join(env.dir, "gale.log"))
	if err != nil {
		return err
	}
	env.gale = p
	env.plain = fmt.Sprintf("127.0.0.1:%d", ports[0])
	env.tlsAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	env.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[2])
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get("http://" + env.plain + "/respond"); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) || p.exited() {
			return fmt.Errorf("gale did not start: %s", p.logTail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reloads sends SIGHUP every o.reload and swaps the certificate files
// every o.certSwap (the next reload picks them up), until stop.
func (env *soakEnv) reloads(o *soakOptions, stop <-chan struct{}, load *soakLoad) {
	reload := time.NewTicker(o.reload)
	swap := time.NewTicker(o.certSwap)
	defer reload.Stop()
	defer swap.Stop()
	for {
		select {
		case <-stop:
			return
		case <-swap.C:
			if err := env.swapCert(); err != nil {
				load.fail("cert-swap", err)
			}
		case <-reload.C:
			if err := env.gale.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				load.fail("reload", err)
			}
		}
	}
}

// reloadCount reads gale's successful and failed reloads from its log.
func (env *soakEnv) reloadCount() map[string]int {
	b, _ := os.ReadFile(env.gale.log)
	s := string(b)
	return map[string]int{
		"reloaded": strings.Count(s, "msg=reloaded") + strings.Count(s, `"msg":"reloaded"`),
		"rejected": strings.Count(s, "keeping the running config"),
	}
}

func (env *soakEnv) close() {
	if env.gale != nil {
		env.gale.stop(10 * time.Second)
	}
	if env.up != nil {
		env.up.close()
	}
	_ = os.RemoveAll(env.dir)
}
