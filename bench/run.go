package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errUsage marks a command-line error (exit status 2).
var errUsage = errors.New("bench: usage")

// failed reports err and returns the exit status it calls for: 2 for a
// command-line error, else 1.
func failed(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// options are the settings shared by the comparison and the sweep.
type options struct {
	Servers      []string          `json:"servers"`
	Workloads    []string          `json:"workloads"`
	Rounds       int               `json:"rounds"`
	Seconds      int               `json:"seconds"`
	Warmup       int               `json:"warmup_seconds"`
	Connections  int               `json:"connections"`
	Threads      int               `json:"threads"`
	ServerCPUs   string            `json:"server_cpus"`
	ClientCPUs   string            `json:"client_cpus"`
	Workers      int               `json:"workers"`
	UpstreamPool int               `json:"upstream_pool"`
	Out          string            `json:"out"`
	GaleBin      string            `json:"gale_bin,omitempty"`
	NoMetrics    bool              `json:"no_metrics,omitempty"` // gale runs without a metrics listener (a -gale-bin from before metrics:)
	WrkBin       string            `json:"wrk_bin,omitempty"`
	H2loadBin    string            `json:"h2load_bin,omitempty"`
	H2Requests   int64             `json:"h2_requests"`    // h2load -n of a measured run (0 in the flag: h2RequestsPerSecond × Seconds)
	H2Clients    int               `json:"h2_clients"`     // h2load -c
	H2Streams    int               `json:"h2_streams"`     // h2load -m
	Bins         map[string]string `json:"bins,omitempty"` // server -> binary given by -NAME-bin
	PinHarness   bool              `json:"pin_harness"`
	// Open loop: the offered rates (requests/s) of a sweep's steps, or the
	// one rate of every run of the comparison; none means closed loop (wrk).
	Rates     []float64 `json:"rates,omitempty"`
	P99Target float64   `json:"p99_target_us,omitempty"` // the sweep's p99 goal per rate, µs
	// The user's own workload (sweep -config/-url/-access-log).
	UserConfig string         `json:"user_config,omitempty"`
	Paths      []weightedPath `json:"paths,omitempty"`
	Host       string         `json:"host,omitempty"`
	AccessLog  string         `json:"access_log,omitempty"`
}

// commonFlags registers the flags shared by both commands.
func commonFlags(fs *flag.FlagSet, o *options) func() error {
	fs.IntVar(&o.Rounds, "rounds", 3, "interleaved rounds; every server and workload is measured once per round, in rotating order")
	fs.IntVar(&o.Seconds, "seconds", 5, "measured seconds per wrk run")
	fs.IntVar(&o.Warmup, "warmup", 1, "seconds of unmeasured wrk load before each measurement (0 = none)")
	fs.IntVar(&o.Connections, "connections", 64, "wrk connections (-c)")
	fs.IntVar(&o.Threads, "threads", 0, "wrk threads (-t); 0 = one per client CPU")
	fs.StringVar(&o.ServerCPUs, "server-cpus", "0", "CPU list the server is pinned to (taskset -c)")
	fs.StringVar(&o.ClientCPUs, "client-cpus", "1", "CPU list wrk, the proxy upstream and the harness are pinned to")
	fs.IntVar(&o.Workers, "workers", 0, "workers of every server (gale event_loops, nginx worker_processes, Caddy GOMAXPROCS); 0 = one per server CPU")
	fs.IntVar(&o.UpstreamPool, "upstream-pool", 0, "idle upstream keep-alive connections the proxies may keep (nginx keepalive, Caddy max_idle_conns_per_host); 0 = max(128, connections)")
	fs.StringVar(&o.Out, "out", "", "output directory (default bench/out/<timestamp> under the module root)")
	fs.StringVar(&o.GaleBin, "gale-bin", "", "prebuilt gale binary (default: go build ./cmd/gale into the output directory)")
	fs.BoolVar(&o.NoMetrics, "no-metrics", false, "run gale without its metrics listener (for a -gale-bin from before metrics: existed); the balance table then has no per-loop counts")
	fs.StringVar(&o.WrkBin, "wrk-bin", "", "wrk binary (default: wrk on PATH)")
	fs.StringVar(&o.H2loadBin, "h2load-bin", "", "h2load binary for the HTTP/2 workloads (default: h2load on PATH)")
	fs.Int64Var(&o.H2Requests, "h2-requests", 0, fmt.Sprintf("requests per measured h2load run (-n); 0 = %d per -seconds; the warm-up makes the same number per -warmup second", h2RequestsPerSecond))
	fs.IntVar(&o.H2Clients, "h2-clients", 50, "h2load connections (-c)")
	fs.IntVar(&o.H2Streams, "h2-streams", 10, "h2load concurrent streams per connection (-m)")
	fs.BoolVar(&o.PinHarness, "pin-harness", true, "pin the harness process itself to the client CPUs")
	o.Bins = map[string]string{}
	bins := map[string]*string{}
	for _, s := range knownServers[1:] {
		bins[s] = fs.String(s+"-bin", "", s+" binary (default: "+s+" on PATH or in /usr/sbin)")
	}
	bins[galeB] = fs.String(galeB+"-bin", "", "a second gale binary, measured as server "+galeB+" with gale's config (A/B of two builds; name "+galeB+" in -servers)")
	return func() error {
		for s, p := range bins {
			if *p != "" {
				o.Bins[s] = *p
			}
		}
		switch {
		case o.Rounds < 1:
			return fmt.Errorf("%w: -rounds must be at least 1", errUsage)
		case o.Seconds < 1:
			return fmt.Errorf("%w: -seconds must be at least 1", errUsage)
		case o.Warmup < 0:
			return fmt.Errorf("%w: -warmup must not be negative", errUsage)
		case o.Connections < 1:
			return fmt.Errorf("%w: -connections must be at least 1", errUsage)
		case o.H2Requests < 0 || o.H2Clients < 1 || o.H2Streams < 1:
			return fmt.Errorf("%w: -h2-requests must not be negative, -h2-clients and -h2-streams must be at least 1", errUsage)
		}
		if o.H2Requests == 0 {
			o.H2Requests = h2RequestsPerSecond * int64(o.Seconds)
		}
		if o.H2Requests < int64(o.H2Clients) {
			return fmt.Errorf("%w: -h2-requests (%d) must be at least -h2-clients (%d)", errUsage, o.H2Requests, o.H2Clients)
		}
		return nil
	}
}

// runner holds the state of one harness run.
type runner struct {
	opts         options
	stdout       io.Writer
	stderr       io.Writer
	modRoot      string
	out          string
	serverCPUs   []int
	clientCPUs   []int
	clkTck       int
	wrkBin       string
	h2loadBin    string
	cert         *benchCert // of the TLS workloads; nil when there are none
	fixtures     *fixtureSet
	specs        []*serverSpec
	notes        []string // skipped servers and other remarks for the report
	upstream     *proc
	upAddr       string
	upTLSAddr    string // the upstream's TLS listener ("" without TLSUp workloads)
	upArgv       []string
	fpm          *proc // the PHP-FPM pool of the php workloads (php.go)
	fpmSock      string
	fpmArgv      []string
	fpmVersion   string
	redis        *proc // the Redis server of the ratelimit-cluster workload (ratelimit.go)
	redisAddr    string
	redisArgv    []string
	redisVersion string
	ctx          context.Context
	began        time.Time // when the first measurement started (for the time left)
}

// newRunner checks the options, the tools and the CPUs, creates the output
// directory and writes the fixtures.
func newRunner(ctx context.Context, o options, stdout, stderr io.Writer) (*runner, error) {
	r := &runner{opts: o, stdout: stdout, stderr: stderr, clkTck: clockTicks(), ctx: ctx}
	var err error
	if r.serverCPUs, err = parseCPUList(o.ServerCPUs); err != nil {
		return nil, fmt.Errorf("%w: -server-cpus: %v", errUsage, err)
	}
	if r.clientCPUs, err = parseCPUList(o.ClientCPUs); err != nil {
		return nil, fmt.Errorf("%w: -client-cpus: %v", errUsage, err)
	}
	online := onlineCPUs()
	for _, c := range append(append([]int{}, r.serverCPUs...), r.clientCPUs...) {
		if c >= online {
			return nil, fmt.Errorf("%w: CPU %d does not exist (%d online)", errUsage, c, online)
		}
	}
	for _, a := range r.serverCPUs {
		for _, b := range r.clientCPUs {
			if a == b {
				r.notes = append(r.notes, fmt.Sprintf("server and client share CPU %d: the load generator competes with the server", a))
			}
		}
	}
	if r.opts.Workers == 0 {
		r.opts.Workers = len(r.serverCPUs)
	}
	if r.opts.Threads == 0 {
		r.opts.Threads = len(r.clientCPUs)
	}
	if r.opts.Threads > r.opts.Connections {
		return nil, fmt.Errorf("%w: -threads (%d) must not exceed -connections (%d)", errUsage, r.opts.Threads, r.opts.Connections)
	}
	if r.opts.UpstreamPool == 0 {
		r.opts.UpstreamPool = max(128, r.opts.Connections)
	}
	needWrk, needH2 := workloadTools(o.Workloads)
	r.wrkBin = findBinary("wrk")
	if o.WrkBin != "" {
		r.wrkBin, _ = exec.LookPath(o.WrkBin)
	}
	if r.wrkBin == "" && needWrk {
		return nil, fmt.Errorf("bench: wrk not found; install it with: %s", installHint)
	}
	r.h2loadBin = h2loadPath(o)
	if r.h2loadBin == "" && needH2 {
		return nil, fmt.Errorf("bench: h2load not found for the HTTP/2 workloads; install it with: apt-get install nghttp2-client")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return nil, fmt.Errorf("bench: taskset not found; install it with: apt-get install util-linux")
	}
	r.modRoot = findModuleRoot()
	r.out = o.Out
	if r.out == "" {
		base := filepath.Join(r.modRoot, "bench", "out")
		if r.modRoot == "" {
			base = filepath.Join(os.TempDir(), "gale-bench")
		}
		r.out = filepath.Join(base, time.Now().Format("20060102-150405"))
	}
	if r.out, err = filepath.Abs(r.out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(r.out, "runs"), 0o755); err != nil {
		return nil, err
	}
	r.opts.Out = r.out
	if r.fixtures, err = writeFixtures(filepath.Join(r.out, "fixtures")); err != nil {
		return nil, fmt.Errorf("bench: writing fixtures: %v", err)
	}
	if needH2 || tlsUpstreamWanted(o.Workloads) {
		if r.cert, err = writeBenchCert(filepath.Join(r.out, "tls")); err != nil {
			return nil, fmt.Errorf("bench: writing the TLS certificate: %v", err)
		}
	}
	raiseFileLimit()
	return r, nil
}

// workloadTools says which load generators the workloads need: wrk for
// HTTP/1.1, h2load for HTTP/2. No workloads at all means wrk.
func workloadTools(ids []string) (wrk, h2 bool) {
	for _, id := range ids {
		if w, ok := findWorkload(id); ok && w.h2() {
			h2 = true
		} else {
			wrk = true
		}
	}
	return wrk || len(ids) == 0, h2
}

// tlsUpstreamWanted reports whether a workload proxies to the upstream's
// TLS listener.
func tlsUpstreamWanted(ids []string) bool {
	for _, id := range ids {
		if w, ok := findWorkload(id); ok && w.TLSUp {
			return true
		}
	}
	return false
}

// h2loadPath finds h2load: -h2load-bin, else on PATH ("" if neither).
func h2loadPath(o options) string {
	if o.H2loadBin != "" {
		p, _ := exec.LookPath(o.H2loadBin)
		return p
	}
	return findBinary("h2load")
}

// pinSelf pins the harness (every thread; new threads inherit it) to the
// client CPUs. It runs after gale is built, so the build may use every CPU.
func (r *runner) pinSelf() {
	if !r.opts.PinHarness {
		return
	}
	if out, err := exec.Command("taskset", "-a", "-p", "-c", r.opts.ClientCPUs, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		r.notes = append(r.notes, "could not pin the harness: "+strings.TrimSpace(string(out)))
	}
}

// onlineCPUs returns the number of CPUs of the machine (not of this
// process's affinity mask).
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err == nil {
		if cpus, err := parseCPUList(strings.TrimSpace(string(b))); err == nil && len(cpus) > 0 {
			return cpus[len(cpus)-1] + 1
		}
	}
	return runtime.NumCPU()
}

// raiseFileLimit lifts the soft descriptor limit to the hard limit; the
// servers inherit it.
func raiseFileLimit() {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
}

// findModuleRoot walks up from the working directory to the go.mod of
// module gale ("" if there is none).
func findModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for i := 0; i < 64; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && regexp.MustCompile(`(?m)^module\s+gale\s*$`).Match(b) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// buildGale builds ./cmd/gale of the module into dir.
func buildGale(modRoot, dir string) (string, error) {
	if modRoot == "" {
		return "", errors.New("module root of gale not found (run from inside the repository or pass -gale-bin)")
	}
	bin := filepath.Join(dir, "gale")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gale")
	cmd.Dir = modRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/gale: %v: %s", err, firstLines(string(out), 4))
	}
	return bin, nil
}

// resolveServers finds (or builds) each requested server. Missing ones are
// skipped with a note saying how to install them.
func (r *runner) resolveServers(names []string) {
	for _, name := range names {
		spec := &serverSpec{Name: name}
		switch name {
		case "gale":
			if r.opts.GaleBin != "" {
				spec.Bin, _ = filepath.Abs(r.opts.GaleBin)
				if _, err := os.Stat(spec.Bin); err != nil {
					r.skip(fmt.Sprintf("gale: -gale-bin %s: %v; skipped", r.opts.GaleBin, err))
					continue
				}
			} else {
				fmt.Fprintln(r.stderr, "building gale (go build ./cmd/gale) ...")
				bin, err := buildGale(r.modRoot, r.out)
				if err != nil {
					r.skip("gale: could not be built: " + err.Error() + "; skipped")
					continue
				}
				spec.Bin = bin
			}
		case galeB:
			spec.Bin, _ = filepath.Abs(r.opts.Bins[galeB])
			if _, err := os.Stat(spec.Bin); r.opts.Bins[galeB] == "" || err != nil {
				r.skip(galeB + ": needs -" + galeB + "-bin, a built gale; skipped")
				continue
			}
		default:
			spec.Bin = findBinary(serverBinary(name))
			if p := r.opts.Bins[name]; p != "" {
				spec.Bin, _ = exec.LookPath(p)
			}
			if spec.Bin == "" && r.opts.Bins[name] != "" {
				r.skip(fmt.Sprintf("%s: -%s-bin %s not found; skipped", name, name, r.opts.Bins[name]))
				continue
			}
			if spec.Bin == "" {
				r.skip(fmt.Sprintf("%s: not installed; skipped (install with: %s)", name, installHint))
				continue
			}
		}
		spec.Version = serverVersion(name, spec.Bin)
		spec.SHA256 = fileSHA256(spec.Bin)
		r.specs = append(r.specs, spec)
	}
}

func (r *runner) skip(note string) {
	r.notes = append(r.notes, note)
	fmt.Fprintln(r.stderr, "note:", note)
}

// parseServers checks a comma-separated server list.
func parseServers(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(strings.ToLower(name))
		if name == "" || seen[name] {
			continue
		}
		known := name == galeB
		for _, k := range knownServers {
			known = known || k == name
		}
		if !known {
			return nil, fmt.Errorf("%w: unknown server %q (known: %s)", errUsage, name, strings.Join(knownServers, ", "))
		}
		seen[name] = true
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: -servers is empty", errUsage)
	}
	return out, nil
}

// freePort asks the kernel for a free 127.0.0.1 port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until addr accepts connections or p exits.
func waitReady(addr string, p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return fmt.Errorf("exited at start (%v): %s", p.err, p.logTail(400))
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %v: %s", addr, timeout, p.logTail(400))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startUpstream starts the proxy upstream (this program's hidden
// subcommand) pinned to the client CPUs.
func (r *runner) startUpstream() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	r.upAddr = fmt.Sprintf("127.0.0.1:%d", port)
	r.upArgv = []string{exe, upstreamCmd, "-listen", r.upAddr, "-root", r.fixtures.Root}
	if r.cert != nil && tlsUpstreamWanted(r.opts.Workloads) {
		tport, err := freePort()
		if err != nil {
			return err
		}
		r.upTLSAddr = fmt.Sprintf("127.0.0.1:%d", tport)
		r.upArgv = append(r.upArgv, "-tls-listen", r.upTLSAddr, "-cert", r.cert.CertFile, "-key", r.cert.KeyFile)
	}
	p, err := startProc(r.upArgv, nil, r.opts.ClientCPUs, filepath.Join(r.out, "upstream.log"))
	if err != nil {
		return err
	}
	for _, a := range []string{r.upAddr, r.upTLSAddr} {
		if a == "" {
			continue
		}
		if err := waitReady(a, p, 10*time.Second); err != nil {
			p.stop(2 * time.Second)
			return fmt.Errorf("upstream: %v", err)
		}
	}
	r.upstream = p
	return nil
}

// measurement is one server × workload × round.
type measurement struct {
	Round            int            `json:"round"`
	Order            int            `json:"order"` // position within the round
	Server           string         `json:"server"`
	Label            string         `json:"label"` // series name: the server, or the sweep variant
	Workload         string         `json:"workload"`
	Settings         []setting      `json:"settings,omitempty"`
	Rate             float64        `json:"offered_rate,omitempty"` // open loop: requests/s offered; 0 = closed loop
	Status           string         `json:"status"`                 // ok | unsupported | failed
	Reason           string         `json:"reason,omitempty"`
	Start            time.Time      `json:"start"`
	ServerCommand    []string       `json:"server_command"`
	ServerEnv        []string       `json:"server_env,omitempty"`
	Config           string         `json:"config"`
	ServerPIDs       []int          `json:"server_pids,omitempty"`
	WrkCommand       []string       `json:"wrk_command,omitempty"`
	Warmup           *wrkResult     `json:"warmup,omitempty"`
	Wrk              *wrkResult     `json:"wrk,omitempty"`     // wrk's figures, or h2load's in the same form
	H2load           *h2loadResult  `json:"h2load,omitempty"`  // everything h2load printed, for the HTTP/2 workloads
	CPUSeconds       float64        `json:"server_cpu_s"`      // on-CPU time of the server's process tree during the measured run (see CPUSource)
	CPUSource        string         `json:"server_cpu_source"` // "schedstat" (ns, every thread) or "stat" (utime+stime, clock ticks)
	CPUSecondsStat   float64        `json:"server_cpu_s_stat"` // utime+stime from /proc/PID/stat, for cross-checking
	CPUUsPerReq      float64        `json:"server_cpu_us_per_req"`
	ServerBusy       float64        `json:"server_busy"`       // CPUSeconds over the run's duration and the server CPUs: 1 = saturated
	SwitchIns        uint64         `json:"server_switch_ins"` // times the server's threads were switched onto a CPU during the run (schedstat); 0 if unknown
	PeakRSSKiB       int64          `json:"peak_rss_kib"`      // the larger of HWMKiB and SampledRSSKiB
	HWMKiB           int64          `json:"hwm_kib"`           // VmHWM summed over the process tree, at the end
	SampledRSSKiB    int64          `json:"sampled_rss_kib"`   // highest VmRSS sum seen by 100 ms sampling
	IdleOpened       int            `json:"idle_opened,omitempty"`
	IdleFailed       int            `json:"idle_failed,omitempty"`
	IdleAliveAfter   int            `json:"idle_alive_after,omitempty"`
	IdleError        string         `json:"idle_error,omitempty"`
	Upstream         *upstreamStats `json:"upstream,omitempty"`               // upstream counters during the measured run
	FPMCPUSeconds    float64        `json:"php_fpm_cpu_s,omitempty"`          // on-CPU time of the PHP-FPM pool during the measured run (php workloads)
	FPMCPUUsPerReq   float64        `json:"php_fpm_cpu_us_per_req,omitempty"` // the same per request
	RedisCPUSeconds  float64        `json:"redis_cpu_s,omitempty"`            // on-CPU time of the harness's redis-server during the measured run (ratelimit-cluster)
	RedisCPUUsPerReq float64        `json:"redis_cpu_us_per_req,omitempty"`   // the same per request
	CheckBefore      *checkResult   `json:"check_before,omitempty"`
	CheckAfter       *checkResult   `json:"check_after,omitempty"`
	CPUMHzBefore     []float64      `json:"cpu_mhz_before,omitempty"` // of the server CPUs
	CPUMHzAfter      []float64      `json:"cpu_mhz_after,omitempty"`
	LoadAvgBefore    string         `json:"loadavg_before"`
	LoadAvgAfter     string         `json:"loadavg_after"`
	// Shares of the CPUs' time during the measured run, from /proc/stat;
	// "others" excludes the server's own time on the server CPUs and wrk's
	// own time on the client CPUs: it is foreign load.
	ServerCPUs    cpuShares `json:"server_cpus"`
	ClientCPUs    cpuShares `json:"client_cpus"`
	WrkCPUSeconds float64   `json:"wrk_cpu_s"`
	// OpenLoop is everything the open-loop generator reported (its
	// figures are also under Wrk in the common form).
	OpenLoop *openLoopResult `json:"open_loop,omitempty"`
	// Threads is the on-CPU time of each of the server's busiest threads
	// during the run: with lock_os_thread each event loop has one.
	Threads []threadCPU `json:"threads,omitempty"`
	// EpollSets are the TCP sockets each of the server's epoll instances
	// (one per gnet event loop, and the accepting reactor's) watched
	// halfway through the run, most connections first.
	EpollSets []epollSet `json:"epoll_sets,omitempty"`
	// Loops are gale's own per-loop counters over the measured run: the
	// differences between a scrape of its metrics right before and one
	// right after, busiest loop first. LoopsError says why they are
	// missing when gale was measured without them.
	Loops      []loopRun `json:"loops,omitempty"`
	LoopsError string    `json:"loops_error,omitempty"`
}

// job is one measurement to make.
type job struct {
	round, order int
	spec         *serverSpec
	label        string
	w            workload
	settings     []setting
	rate         float64 // open loop: requests/s; 0 = closed loop
}

// loadKnobs are a job's load and placement, after its variant's
// harness-side settings (connections, h2_streams, server_cpus,
// GOMAXPROCS, metrics) are applied to the options.
type loadKnobs struct {
	conns, streams int
	serverCPUs     string
	env            []string
	noMetrics      bool // metrics=off: gale runs without its metrics listener
}

// knobs splits j's settings into gale server: settings and the harness's
// own, and returns both.
func (r *runner) knobs(j job) ([]setting, loadKnobs) {
	k := loadKnobs{conns: r.opts.Connections, streams: r.opts.H2Streams, serverCPUs: r.opts.ServerCPUs, noMetrics: r.opts.NoMetrics}
	var server []setting
	for _, s := range j.settings {
		switch s.Key {
		case "connections":
			k.conns, _ = strconv.Atoi(s.Value)
		case "h2_streams":
			k.streams, _ = strconv.Atoi(s.Value)
		case "server_cpus":
			k.serverCPUs = s.Value
		case "GOMAXPROCS":
			k.env = append(k.env, "GOMAXPROCS="+s.Value)
		case "metrics":
			k.noMetrics = s.Value == "off"
		default:
			server = append(server, s)
		}
	}
	return server, k
}

var reUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// measure makes one measurement. Only processes it started are stopped.
func (r *runner) measure(j job) (m measurement) {
	m = measurement{Round: j.round, Order: j.order, Server: j.spec.Name, Label: j.label, Workload: j.w.ID,
		Settings: j.settings, Rate: j.rate, Start: time.Now().UTC(), Status: "ok"}
	serverSettings, k := r.knobs(j)
	serverCPUs, err := parseCPUList(k.serverCPUs)
	if err != nil || k.conns < 1 || k.streams < 1 {
		m.Status, m.Reason = "failed", fmt.Sprintf("variant: server_cpus %q, connections %d, h2_streams %d", k.serverCPUs, k.conns, k.streams)
		return m
	}
	env, err := r.newServerEnv(j, serverSettings, k.noMetrics)
	if err != nil {
		return m.fail("failed", "%v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", env.Port)
	l, err := j.spec.prepare(env, j.w)
	if errors.Is(err, errUnsupported) {
		return m.fail("unsupported", "%v", err)
	}
	if err != nil {
		return m.fail("failed", "config: %v", err)
	}
	m.Config = l.Config
	m.ServerEnv = append(l.Env, k.env...)
	p, err := startProc(l.Argv, m.ServerEnv, k.serverCPUs, filepath.Join(env.Dir, "server.log"))
	if err != nil {
		return m.fail("unsupported", "start: %v", err)
	}
	m.ServerCommand = p.argv
	defer p.stop(5 * time.Second)
	if err := waitReady(addr, p, 10*time.Second); err != nil {
		return m.fail("unsupported", "server %v", err)
	}
	t := target{p: p, l: l, addr: addr, url: j.w.scheme() + "://" + addr + j.w.Path, dir: env.Dir,
		want: r.fixtures.Files[j.w.Fixture], cpus: serverCPUs}
	pre := r.check(addr, t.url, j.w, t.want)
	m.CheckBefore = &pre
	if !pre.OK && j.w.h2() {
		return m.fail("unsupported", "no HTTP/2 (%s) from this server: response check before load: %s", j.w.Proto, pre.Error)
	}
	if !pre.OK {
		return m.fail("unsupported", "response check before load: %s", pre.Error)
	}
	if j.w.Idle > 0 {
		ic := openIdle(addr, j.w.Path, j.w.Idle)
		defer ic.close()
		m.IdleOpened, m.IdleFailed, m.IdleError = len(ic.conns), ic.failed, ic.err
		defer func() { m.IdleAliveAfter = ic.alive() }()
		if m.IdleFailed > 0 {
			defer func() {
				if m.Status == "ok" {
					m.Reason = fmt.Sprintf("%d of %d idle connections failed to open: %s", m.IdleFailed, j.w.Idle, m.IdleError)
				}
			}()
		}
	}
	if r.opts.Warmup > 0 {
		res, _, _, _, _, err := r.runLoad(j, k, t.url, t.dir, true)
		if errors.Is(err, errNoH2) {
			return m.fail("unsupported", "warm-up: %v", err)
		}
		if err != nil {
			return m.fail("failed", "warm-up: %v", err)
		}
		m.Warmup = &res
	}
	r.load(j, k, t, &m)
	return m
}

// fail sets m's status and the reason for it, and returns m.
func (m *measurement) fail(status, format string, args ...any) measurement {
	m.Status = status
	m.Reason = fmt.Sprintf(format, args...)
	return *m
}

// newServerEnv creates the directory of j's files and returns the
// environment its server is configured from: a free port, and for gale a
// free metrics port unless metrics are off.
func (r *runner) newServerEnv(j job, settings []setting, noMetrics bool) (serverEnv, error) {
	name := fmt.Sprintf("r%d-%s-%s", j.round, j.w.ID, j.label)
	if j.rate > 0 {
		name += fmt.Sprintf("-%.0frps", j.rate)
	}
	dir := filepath.Join(r.out, "runs", reUnsafe.ReplaceAllString(name, "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return serverEnv{}, err
	}
	port, err := freePort()
	if err != nil {
		return serverEnv{}, err
	}
	env := serverEnv{Fixtures: r.fixtures, Dir: dir, Port: port, Upstream: r.upAddr, Workers: r.opts.Workers,
		Pool: r.opts.UpstreamPool, Settings: settings, Proto: j.w.Proto, Cert: r.cert, UserConfig: r.opts.UserConfig,
		FPM: r.fpmSock, Redis: r.redisAddr}
	if (j.spec.Name == "gale" || j.spec.Name == galeB) && !noMetrics {
		if env.MetricsPort, err = freePort(); err != nil {
			return serverEnv{}, err
		}
	}
	if j.w.TLSUp {
		env.TLSUpstream, env.UpChurn = r.upTLSAddr, j.w.UpChurn
	}
	env.Cache = j.w.Cache
	if env.Upstream == "" {
		env.Upstream = "127.0.0.1:9" // unused: no proxy workload in this run
	}
	return env, nil
}

// target is the running server a measurement loads.
type target struct {
	p    *proc
	l    launch
	addr string
	url  string  // checked before and after the load, and loaded
	dir  string  // the measurement's directory
	want fixture // the body url must answer with
	cpus []int   // the CPUs the server is pinned to
}

// load runs j's load against t and records in m what it cost the server
// and the client, and whether the server still answers correctly after
// it; a failure sets m's status and reason.
func (r *runner) load(j job, k loadKnobs, t target, m *measurement) {
	var upBefore upstreamStats
	var err error
	if j.w.Proxy {
		if upBefore, err = fetchUpstreamStats(r.upAddr); err != nil {
			m.fail("failed", "upstream stats: %v", err)
			return
		}
	}
	// The scrapes stay outside the CPU readings: what they cost gale is
	// not the load's.
	loops0, loopsErr := scrapeIf(t.l.MetricsURL)
	m.LoadAvgBefore = loadAvg()
	m.CPUMHzBefore = cpuMHz(t.cpus)
	s0, err := sampleTree(t.p.pid())
	if err != nil {
		m.fail("failed", "reading /proc before: %v", err)
		return
	}
	srv0, cli0 := readCPUTimes(t.cpus), readCPUTimes(r.clientCPUs)
	fpm0, redis0 := r.fpmSample(), r.redisSample()
	th0 := threadTimes(s0.PIDs)
	smp := startSampler(t.p.pid(), s0.PIDs, time.Duration(r.opts.Seconds)*time.Second/2)
	res, full, wrkCPU, h2res, olres, werr := r.runLoad(j, k, t.url, t.dir, false)
	s1, serr := sampleTree(t.p.pid())
	srv1, cli1 := readCPUTimes(t.cpus), readCPUTimes(r.clientCPUs)
	fpm1, redis1 := r.fpmSample(), r.redisSample()
	m.Threads = busiestThreads(th0, threadTimes(s1.PIDs), 8)
	m.Loops, m.LoopsError = loopsAfter(t.l.MetricsURL, loops0, loopsErr)
	m.OpenLoop = olres
	m.SampledRSSKiB, m.EpollSets = smp.stop()
	m.CPUMHzAfter = cpuMHz(t.cpus)
	m.LoadAvgAfter = loadAvg()
	m.WrkCommand = full
	m.H2load = h2res
	if errors.Is(werr, errNoH2) {
		m.fail("unsupported", "%v", werr)
		return
	}
	if werr != nil {
		m.fail("failed", "%v", werr)
		return
	}
	m.Wrk = &res
	if serr != nil {
		m.fail("failed", "server gone after the run: %v (%s)", serr, t.p.logTail(300))
		return
	}
	m.ServerPIDs = s1.PIDs
	m.WrkCPUSeconds = wrkCPU
	r.serverCPUSeconds(m, s0, s1)
	if res.Requests > 0 {
		m.CPUUsPerReq = m.CPUSeconds * 1e6 / float64(res.Requests)
	}
	if res.DurationSec > 0 {
		m.ServerBusy = m.CPUSeconds / (res.DurationSec * float64(len(t.cpus)))
	}
	m.ServerCPUs = shareOf(srv0, srv1, m.CPUSeconds*float64(r.clkTck))
	m.ClientCPUs = shareOf(cli0, cli1, wrkCPU*float64(r.clkTck))
	// Sampled sums have been seen above VmHWM for Go servers (the kernel
	// keeps the high-water mark lazily, and the last sample is taken after
	// it is read): the larger of the two is the peak.
	m.PeakRSSKiB = max(s1.HWMKiB, m.SampledRSSKiB)
	m.HWMKiB = s1.HWMKiB
	if j.w.Proxy {
		m.Upstream = upstreamSince(r.upAddr, upBefore)
	}
	if j.w.PHP {
		r.fpmCPU(m, fpm0, fpm1)
	}
	if j.w.RateLimit == "cluster" {
		r.redisCPU(m, redis0, redis1)
	}
	post := r.check(t.addr, t.url, j.w, t.want)
	m.CheckAfter = &post
	switch {
	case res.Requests == 0:
		m.fail("failed", "wrk completed no requests")
	case !post.OK:
		m.fail("failed", "response check after load: %s", post.Error)
	case t.p.exited():
		m.fail("failed", "server exited during the run: %s", t.p.logTail(300))
	}
}

// serverCPUSeconds records in m the CPU time the server's process tree
// spent between the samples s0 and s1, from schedstat where it can be
// trusted and from the tick counts otherwise.
func (r *runner) serverCPUSeconds(m *measurement, s0, s1 treeSample) {
	m.CPUSecondsStat = float64(s1.CPUTicks-s0.CPUTicks) / float64(r.clkTck)
	m.CPUSeconds, m.CPUSource = m.CPUSecondsStat, "stat"
	if s0.CPUNanos > 0 && s1.CPUNanos >= s0.CPUNanos {
		// The same quantity at ns instead of 10 ms resolution. A thread
		// that exited during the run takes its time out of the sum: when
		// the sum falls short of utime+stime by more than two ticks, the
		// tick count is used.
		sched := float64(s1.CPUNanos-s0.CPUNanos) / 1e9
		if sched >= m.CPUSecondsStat-2/float64(r.clkTck) {
			m.CPUSeconds, m.CPUSource = sched, "schedstat"
			// Same caveat: only when no thread took its count with it.
			if s1.SwitchIns >= s0.SwitchIns {
				m.SwitchIns = s1.SwitchIns - s0.SwitchIns
			}
		}
	}
}

// upstreamSince returns what the test upstream at addr has counted since
// before, or nil when its counters cannot be read.
func upstreamSince(addr string, before upstreamStats) *upstreamStats {
	after, err := fetchUpstreamStats(addr)
	if err != nil {
		return nil
	}
	return &upstreamStats{Conns: after.Conns - before.Conns, Requests: after.Requests - before.Requests,
		CloseRequests: after.CloseRequests - before.CloseRequests,
		TLSFull:       after.TLSFull - before.TLSFull, TLSResumed: after.TLSResumed - before.TLSResumed}
}

// sampler samples the summed RSS of a process tree every 100 ms, and
// reads the process's epoll sets once, halfway through a run.
type sampler struct {
	stopc   chan struct{}
	sampled chan int64
	epolled chan []epollSet
}

// startSampler starts sampling the RSS of pids and reads the epoll sets
// of pid after half. Halfway through the run every connection the load
// keeps is open: that is when each loop's share of them is read.
func startSampler(pid int, pids []int, half time.Duration) *sampler {
	s := &sampler{stopc: make(chan struct{}), sampled: make(chan int64, 1), epolled: make(chan []epollSet, 1)}
	go func() {
		var peak int64
		var sets []epollSet
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		halfway := time.NewTimer(half)
		defer halfway.Stop()
		for {
			if rss := sumRSS(pids); rss > peak {
				peak = rss
			}
			select {
			case <-t.C:
			case <-halfway.C:
				sets = readEpollSets(pid)
			case <-s.stopc:
				s.sampled <- peak
				s.epolled <- sets
				return
			}
		}
	}()
	return s
}

// stop stops the sampler and returns the peak RSS sampled, in KiB, and
// the epoll sets read (nil if the run ended before halfway).
func (s *sampler) stop() (int64, []epollSet) {
	close(s.stopc)
	return <-s.sampled, <-s.epolled
}

// scrapeIf scrapes gale's per-loop counters when it serves metrics.
func scrapeIf(url string) (map[string]loopSample, error) {
	if url == "" {
		return nil, nil
	}
	return scrapeLoops(url)
}

// loopsAfter scrapes the counters again after the run and returns each
// loop's share of the run, or why there is none.
func loopsAfter(url string, before map[string]loopSample, beforeErr error) ([]loopRun, string) {
	if url == "" {
		return nil, ""
	}
	if beforeErr != nil {
		return nil, "scrape before the run: " + beforeErr.Error()
	}
	after, err := scrapeLoops(url)
	if err != nil {
		return nil, "scrape after the run: " + err.Error()
	}
	return loopDeltas(before, after), ""
}

// check checks the workload's response with the client of its protocol.
func (r *runner) check(addr, url string, w workload, want fixture) checkResult {
	if w.Custom {
		return checkMix(addr, w, r.opts.Host)
	}
	if w.h2() {
		return checkH2Response(url, w, want, r.cert)
	}
	return checkResponse(url, w, want)
}

// runLoad runs the job's load generator, for the warm-up or for the
// measured run: the open-loop generator at the job's rate, wrk for
// -seconds (-warmup), or h2load for -h2-requests (the same number per
// warm-up second). It returns the figures every generator reports, the
// full command line, the generator's CPU seconds and, for h2load and the
// open-loop generator, everything they reported.
func (r *runner) runLoad(j job, k loadKnobs, url, dir string, warmup bool) (wrkResult, []string, float64, *h2loadResult, *openLoopResult, error) {
	w := j.w
	secs := r.opts.Seconds
	if warmup {
		secs = r.opts.Warmup
	}
	if j.rate > 0 {
		ol, full, cpu, err := r.runOpenLoopProc(openLoopArgs(j, k, url, secs, r.opts.Host))
		if err != nil {
			return wrkResult{}, full, cpu, nil, nil, fmt.Errorf("open-loop generator: %w", err)
		}
		return ol.loadResult(), full, cpu, nil, &ol, nil
	}
	if !w.h2() {
		argv := wrkArgs(r.wrkBin, r.opts.Threads, k.conns, secs, w, url)
		if w.Custom {
			script, err := writeWrkMix(dir, w.Mix, r.opts.Host)
			if err != nil {
				return wrkResult{}, nil, 0, nil, nil, err
			}
			argv = append(argv[:len(argv)-1], "-s", script, url)
		}
		res, full, cpu, err := r.runWrk(argv, secs)
		if err != nil {
			err = fmt.Errorf("wrk: %w", err)
		}
		return res, full, cpu, nil, nil, err
	}
	n := r.opts.H2Requests
	if warmup {
		n = max(n*int64(r.opts.Warmup)/int64(r.opts.Seconds), int64(r.opts.H2Clients))
	}
	logFile := filepath.Join(dir, "h2load-requests.tsv")
	defer removeQuietly(logFile)
	argv := h2loadArgs(r.h2loadBin, r.opts.Threads, r.opts.H2Clients, k.streams, n, logFile, url)
	h2, full, cpu, err := r.runH2load(argv, n, logFile, w.Proto)
	if err != nil {
		err = fmt.Errorf("h2load: %w", err)
	}
	return h2.loadResult(), full, cpu, &h2, nil, err
}

// runH2load runs h2load pinned to the client CPUs, reads its summary and
// its per-request log, and verifies the run (see h2loadResult.verify). The
// time limit allows for a server far slower than h2RequestsPerSecond.
func (r *runner) runH2load(argv []string, n int64, logFile, proto string) (h2loadResult, []string, float64, error) {
	full := append([]string{"taskset", "-c", r.opts.ClientCPUs}, argv...)
	ctx, cancel := context.WithTimeout(r.ctx, time.Duration(60+n/1000)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return h2loadResult{}, full, 0, fmt.Errorf("%v: %s", err, firstLines(out.String(), 3))
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	res, err := parseH2load(out.String())
	if err != nil {
		return res, full, cpu, err
	}
	f, err := os.Open(logFile)
	if err != nil {
		return res, full, cpu, err
	}
	defer f.Close()
	if res.LatencyUs, res.LoggedCount, res.LoggedNon2xx, err = readH2Log(f); err != nil {
		return res, full, cpu, err
	}
	return res, full, cpu, res.verify(proto)
}

// runWrk runs wrk pinned to the client CPUs and parses its output. It
// returns the full command line and wrk's CPU seconds.
func (r *runner) runWrk(argv []string, seconds int) (wrkResult, []string, float64, error) {
	full := append([]string{"taskset", "-c", r.opts.ClientCPUs}, argv...)
	ctx, cancel := context.WithTimeout(r.ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if err != nil {
		return wrkResult{}, full, 0, fmt.Errorf("%v: %s", err, firstLines(out.String(), 3))
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	res, err := parseWrk(out.String())
	return res, full, cpu, err
}

// machineInfo describes the host of a run.
type machineInfo struct {
	CPUModel   string `json:"cpu_model"`
	OnlineCPUs int    `json:"online_cpus"`
	Kernel     string `json:"kernel"`
	GoVersion  string `json:"go_version"`
	ClkTck     int    `json:"clk_tck"`
	Governor   string `json:"cpufreq_governor,omitempty"`
	LoadAvg    string `json:"loadavg_at_start"`
}

func describeMachine(clk int) machineInfo {
	mi := machineInfo{OnlineCPUs: onlineCPUs(), GoVersion: runtime.Version(), ClkTck: clk, LoadAvg: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				mi.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		mi.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err == nil {
		mi.Governor = strings.TrimSpace(string(b))
	}
	return mi
}

// results is everything a run produced; written as results.json.
type results struct {
	Kind         string              `json:"kind"` // compare | sweep
	Started      time.Time           `json:"started"`
	Finished     time.Time           `json:"finished"`
	Args         []string            `json:"args"`
	Options      options             `json:"options"`
	Machine      machineInfo         `json:"machine"`
	Servers      []*serverSpec       `json:"servers"`
	WrkBin       string              `json:"wrk_bin"`
	WrkVersion   string              `json:"wrk_version"`
	H2loadBin    string              `json:"h2load_bin,omitempty"`
	H2loadVer    string              `json:"h2load_version,omitempty"`
	Cert         *benchCert          `json:"tls_cert,omitempty"` // of the HTTP/2-over-TLS workloads
	GitCommit    string              `json:"git_commit,omitempty"`
	Notes        []string            `json:"notes,omitempty"`
	Fairness     map[string][]string `json:"fairness"`
	Fixtures     *fixtureSet         `json:"fixtures"`
	Workloads    []string            `json:"workloads"`
	Upstream     []string            `json:"upstream_command,omitempty"`
	FPM          []string            `json:"php_fpm_command,omitempty"`
	FPMVersion   string              `json:"php_fpm_version,omitempty"`
	Redis        []string            `json:"redis_command,omitempty"`
	RedisVersion string              `json:"redis_version,omitempty"`
	Sweep        *sweepInfo          `json:"sweep,omitempty"`
	Custom       *workload           `json:"custom_workload,omitempty"` // the user's request mix, when the sweep measured one
	Measurements []measurement       `json:"measurements"`
}

// gitCommit describes the module's checkout ("" outside git).
func gitCommit(modRoot string) string {
	if modRoot == "" {
		return ""
	}
	out, err := exec.Command("git", "-C", modRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", modRoot, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		s += " (modified)"
	}
	return s
}

// rotate returns xs rotated left by k.
func rotate[T any](xs []T, k int) []T {
	n := len(xs)
	if n == 0 {
		return nil
	}
	k %= n
	return append(append([]T{}, xs[k:]...), xs[:k]...)
}

// procRegistry tracks started processes so an interrupt stops them.
var procRegistry = struct {
	sync.Mutex
	m map[*proc]bool
}{m: map[*proc]bool{}}

func registerProc(p *proc) {
	procRegistry.Lock()
	procRegistry.m[p] = true
	procRegistry.Unlock()
}

func unregisterProc(p *proc) {
	procRegistry.Lock()
	delete(procRegistry.m, p)
	procRegistry.Unlock()
}

// stopAllProcs stops every process the harness started and still runs.
func stopAllProcs() {
	procRegistry.Lock()
	ps := make([]*proc, 0, len(procRegistry.m))
	for p := range procRegistry.m {
		ps = append(ps, p)
	}
	procRegistry.Unlock()
	for _, p := range ps {
		p.stop(2 * time.Second)
	}
}

// withInterrupt returns a context cancelled on SIGINT/SIGTERM; on the
// signal every started process is stopped.
func withInterrupt() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
			cancel()
			stopAllProcs()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}

// writeOutputs writes results.json, results.md and chart.svg into the
// output directory and prints the Markdown to stdout.
func (r *runner) writeOutputs(res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "results.json"), b, 0o644); err != nil {
		return err
	}
	md := renderMarkdown(res)
	if err := os.WriteFile(filepath.Join(r.out, "results.md"), []byte(md), 0o644); err != nil {
		return err
	}
	names := []string{"results.json", "results.md"}
	for suffix, svg := range chartFiles(res) {
		name := "chart" + suffix + ".svg"
		if err := os.WriteFile(filepath.Join(r.out, name), []byte(svg), 0o644); err != nil {
			return err
		}
		names = append(names, name)
	}
	sort.Strings(names[2:])
	fmt.Fprint(r.stdout, md)
	fmt.Fprintf(r.stdout, "\nwrote %s/{%s}\n", r.out, strings.Join(names, ","))
	if res.Kind == "sweep" {
		if warns, _ := sweepSummary(res); len(warns) > 0 {
			for _, w := range warns {
				fmt.Fprintln(r.stderr, "warning:", w)
			}
		}
	}
	return nil
}

// finish writes the outputs and returns the exit code. An interrupted run
// writes what it measured, says so, and exits 130.
func (r *runner) finish(res *results, total, done int) int {
	interrupted := r.ctx.Err() != nil
	if interrupted {
		r.notes = append(r.notes, fmt.Sprintf("interrupted: %d of %d measurements made", done, total))
	}
	res.Notes = r.notes
	res.Finished = time.Now().UTC()
	if err := r.writeOutputs(res); err != nil {
		fmt.Fprintln(r.stderr, "bench:", err)
		return 1
	}
	if interrupted {
		fmt.Fprintln(r.stderr, "bench: interrupted")
		return 130
	}
	return 0
}

// announce prints what is about to run, with the round and an estimate
// of the time left from the measurements made so far.
func (r *runner) announce(j job, total, done int) {
	if r.began.IsZero() {
		r.began = time.Now()
	}
	left := "unknown"
	if done > 0 {
		per := time.Since(r.began) / time.Duration(done)
		left = (per * time.Duration(total-done)).Round(time.Second).String()
	}
	what := j.label
	if j.rate > 0 {
		what += fmt.Sprintf(" at %s req/s (open loop)", fmtInt(j.rate))
	}
	fmt.Fprintf(r.stderr, "[%d/%d] round %d of %d: %s %s ... (about %s left)\n", done+1, total, j.round, r.opts.Rounds, j.w.ID, what, left)
}

// progress prints one line about a finished measurement.
func (r *runner) progress(m measurement, total, done int) {
	if m.Status != "ok" {
		fmt.Fprintf(r.stderr, "[%d/%d] round %d of %d %s %s: %s: %s\n", done, total, m.Round, r.opts.Rounds, m.Workload, m.Label, m.Status, m.Reason)
		return
	}
	fmt.Fprintf(r.stderr, "[%d/%d] round %d of %d %s %s: %.0f req/s, %.1f µs CPU/req, p99 %s, RSS %.1f MiB\n", done, total,
		m.Round, r.opts.Rounds, m.Workload, m.Label, m.Wrk.ReqPerSec, m.CPUUsPerReq, fmtMs(m.Wrk.LatencyUs["99"]), float64(m.PeakRSSKiB)/1024)
}

// start prepares a results value with everything known before measuring.
func (r *runner) start(kind string, args []string, ws []workload) *results {
	res := &results{Kind: kind, Started: time.Now().UTC(), Args: args, Options: r.opts, Machine: describeMachine(r.clkTck),
		Servers: r.specs, WrkBin: r.wrkBin, WrkVersion: wrkVersion(r.wrkBin), GitCommit: gitCommit(r.modRoot), Cert: r.cert,
		Fairness: map[string][]string{}, Fixtures: r.fixtures}
	if _, h2 := workloadTools(r.opts.Workloads); h2 {
		res.H2loadBin, res.H2loadVer = r.h2loadBin, h2loadVersion(r.h2loadBin)
	}
	for _, s := range r.specs {
		res.Fairness[s.Name] = fairnessNotes(s.Name, r.opts.Workers, r.opts.UpstreamPool)
	}
	for _, w := range ws {
		res.Workloads = append(res.Workloads, w.ID)
	}
	return res
}

// needsUpstream reports whether any workload is proxied.
func needsUpstream(ws []workload) bool {
	for _, w := range ws {
		if w.Proxy {
			return true
		}
	}
	return false
}

// runCompare is the default command: every server × workload × round.
func runCompare(args []string, stdout, stderr io.Writer) int {
	o, ws, early, code, ok := parseCompare(args, stderr)
	if !ok {
		return code
	}
	ctx, stop := withInterrupt()
	defer stop()
	r, err := newRunner(ctx, o, stdout, stderr)
	if err != nil {
		return failed(stderr, err)
	}
	defer stopAllProcs()
	for _, n := range early {
		r.skip(n)
	}
	r.resolveServers(o.Servers)
	if len(r.specs) == 0 {
		fmt.Fprintln(stderr, "bench: no server to measure")
		return 1
	}
	r.pinSelf()
	res := r.start("compare", args, ws)
	res.Notes = r.notes
	stopHelpers, err := r.startHelpers(ws, res)
	defer stopHelpers()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	total := r.opts.Rounds * len(ws) * len(r.specs)
	done := r.compareRounds(res, ws, total)
	return r.finish(res, total, done)
}

// parseCompare parses the compare command's flags into the options and
// the workloads to run, with the notes to record before any measurement.
// When it reports false the command is over and exits with code.
func parseCompare(args []string, stderr io.Writer) (o options, ws []workload, early []string, code int, ok bool) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", strings.Join(knownServers, ","), "comma-separated servers to compare: "+strings.Join(knownServers, ","))
	wls := fs.String("workloads", "all", "comma-separated workload IDs, or all: "+workloadIDs())
	rate := fs.Float64("rate", 0, "open loop: offer every HTTP/1.1 workload this many requests/s with the harness's open-loop generator instead of wrk, so every server's CPU per request is measured at the same load (HTTP/2 workloads stay closed-loop with h2load)")
	check := commonFlags(fs, &o)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `usage: go run ./bench [flags]
       go run ./bench sweep [flags]   (gale reactor-tuning lab; see sweep -h)
       go run ./bench report R.json   (write R.md and R.svg again from a run's JSON)

Compares gale with nginx, Caddy and lighttpd on the same machine: each server
pinned to -server-cpus with -workers workers, wrk pinned to -client-cpus.
Rounds are interleaved and the order rotates; results are medians (min-max).
Writes results.json, results.md and chart.svg to -out. See bench/README.md.

Workloads:
%s
Flags:
`, workloadTable())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, nil, nil, 0, false
		}
		return o, nil, nil, 2, false
	}
	if err := check(); err != nil {
		fmt.Fprintln(stderr, err)
		return o, nil, nil, 2, false
	}
	names, err := parseServers(*servers)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return o, nil, nil, 2, false
	}
	ws, err = parseWorkloads(*wls)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return o, nil, nil, 2, false
	}
	if (*wls == "all" || *wls == "") && h2loadPath(o) == "" {
		ws = withoutH2(ws)
		early = append(early, "h2load not installed: the HTTP/2 workloads were skipped (install with: apt-get install nghttp2-client)")
	}
	if *rate < 0 {
		fmt.Fprintln(stderr, "bench: -rate must not be negative")
		return o, nil, nil, 2, false
	}
	if *rate > 0 {
		o.Rates = []float64{*rate}
	}
	o.Servers = names
	for _, w := range ws {
		o.Workloads = append(o.Workloads, w.ID)
	}
	return o, ws, early, 0, true
}

// compareRounds measures every server on every workload in each round,
// rotating the order from round to round, and appends the measurements
// to res. It stops at an interrupt, and returns how many measurements of
// total it made.
func (r *runner) compareRounds(res *results, ws []workload, total int) int {
	done := 0
	for round := 1; round <= r.opts.Rounds; round++ {
		order := 0
		for _, w := range rotate(ws, round-1) {
			for _, spec := range rotate(r.specs, round-1) {
				if r.ctx.Err() != nil {
					break
				}
				order++
				j := job{round: round, order: order, spec: spec, label: spec.Name, w: w}
				if len(r.opts.Rates) > 0 && !w.h2() {
					j.rate = r.opts.Rates[0]
				}
				r.announce(j, total, done)
				m := r.measure(j)
				if r.ctx.Err() != nil {
					break // cut short by the interrupt: not a result
				}
				done++
				r.noteNoH2(m, w)
				r.progress(m, total, done)
				res.Measurements = append(res.Measurements, m)
			}
		}
	}
	return done
}

// withoutH2 returns the workloads that are not HTTP/2.
func withoutH2(ws []workload) []workload {
	var out []workload
	for _, w := range ws {
		if !w.h2() {
			out = append(out, w)
		}
	}
	return out
}

// noteNoH2 adds a note, once per server and protocol, when a server was
// not measured on an HTTP/2 workload because it did not speak HTTP/2
// there: the report then says why its HTTP/2 rows are empty, and the
// same command measures it once it does.
func (r *runner) noteNoH2(m measurement, w workload) {
	if !w.h2() || m.Status != "unsupported" {
		return
	}
	note := fmt.Sprintf("%s: not measured on the %s workloads: %s", m.Server, w.Proto, m.Reason)
	prefix := fmt.Sprintf("%s: not measured on the %s workloads:", m.Server, w.Proto)
	for _, n := range r.notes {
		if strings.HasPrefix(n, prefix) {
			return
		}
	}
	r.skip(shorten(note, 400))
}

func workloadIDs() string {
	var ids []string
	for _, w := range allWorkloads {
		ids = append(ids, w.ID)
	}
	return strings.Join(ids, ",")
}

func workloadTable() string {
	var b strings.Builder
	for _, w := range knownWorkloads() {
		fmt.Fprintf(&b, "  %-21s %s (GET %s)\n", w.ID, w.Desc, w.Path)
	}
	return b.String()
}

// wrkVersion returns wrk's version line without its copyright notice.
func wrkVersion(bin string) string {
	v := commandOutput(bin, "-v")
	if i := strings.Index(v, " Copyright"); i > 0 {
		v = v[:i]
	}
	return v
}

// startHelpers starts the processes the workloads ws need besides the
// servers (the upstream, PHP-FPM, redis-server), records their command
// lines in res, and returns what stops the ones started. On an error the
// ones started before it are stopped by the returned function too.
func (r *runner) startHelpers(ws []workload, res *results) (func(), error) {
	helpers := []struct {
		needed bool
		start  func() error
		record func()
		proc   func() *proc
	}{
		{needsUpstream(ws), r.startUpstream, func() { res.Upstream = r.upArgv }, func() *proc { return r.upstream }},
		{needsFPM(ws), r.startFPM, func() { res.FPM, res.FPMVersion = r.fpmArgv, r.fpmVersion }, func() *proc { return r.fpm }},
		{needsRedis(ws), r.startRedis, func() { res.Redis, res.RedisVersion = r.redisArgv, r.redisVersion }, func() *proc { return r.redis }},
	}
	var started []*proc
	stop := func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].stop(2 * time.Second)
		}
	}
	for _, h := range helpers {
		if !h.needed {
			continue
		}
		if err := h.start(); err != nil {
			return stop, err
		}
		h.record()
		started = append(started, h.proc())
	}
	return stop, nil
}
