package main

import (
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The bulk mode: one large static file downloaded by curl from gale over
// HTTP/1.1 and HTTP/2, cleartext and TLS, one download at a time, gale
// pinned to one CPU and curl to another, rounds interleaved with a
// rotating order. It reports each protocol's throughput and gale's CPU
// time per download (utime+stime of /proc/PID/stat), and the HTTP/2 to
// HTTP/1.1 ratios.

// bulkMode is one way of downloading the file.
type bulkMode struct {
	ID   string
	TLS  bool
	Args []string // curl's protocol flags
	Want string   // the %{http_version} curl must report
}

var bulkModes = []bulkMode{
	{"h1", false, []string{"--http1.1"}, "1.1"},
	{"h2c", false, []string{"--http2-prior-knowledge"}, "2"},
	{"tls-h1", true, []string{"--http1.1", "-k"}, "1.1"},
	{"tls-h2", true, []string{"--http2", "-k"}, "2"},
}

// bulkSample is one download.
type bulkSample struct {
	MBps  float64 // bytes / time_total / 1e6
	CPUms float64 // gale's CPU time during the download
}

// bulkServer is one gale under measurement.
type bulkServer struct {
	Name          string
	bin           string
	p             *proc
	plain, secure int
}

func runBulk(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench bulk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mib := fs.Int("mib", 256, "size of the file in MiB")
	rounds := fs.Int("rounds", 5, "rounds (each downloads once per mode and server)")
	serverCPU := fs.String("server-cpu", "0", "CPU list gale is pinned to")
	clientCPU := fs.String("client-cpu", "1", "CPU list curl is pinned to")
	galeBin := fs.String("gale-bin", "", "gale binary (default: build ./cmd/gale)")
	baseBin := fs.String("base-bin", "", "a second gale binary measured in the same rounds, interleaved (e.g. main's)")
	modes := fs.String("modes", "h1,h2c,tls-h1,tls-h2", "modes to run")
	maxOut := fs.String("max-buffered-output", "", "gale's server.max_buffered_output (default: gale's)")
	outDir := fs.String("out", "", "directory for the file, config and logs (default: a temporary one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dir := *outDir
	if dir == "" {
		d, err := os.MkdirTemp("", "gale-bulk-")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var ms []bulkMode
	for _, id := range strings.Split(*modes, ",") {
		for _, m := range bulkModes {
			if m.ID == id {
				ms = append(ms, m)
			}
		}
	}
	server := "event_loops: 1"
	if *maxOut != "" {
		server += ", max_buffered_output: " + *maxOut
	}
	servers := []*bulkServer{{Name: "gale", bin: *galeBin}}
	if *baseBin != "" {
		servers = append(servers, &bulkServer{Name: "base", bin: *baseBin})
	}
	res, err := bulkRun(dir, server, *mib, *rounds, *serverCPU, *clientCPU, servers, ms, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench bulk:", err)
		return 1
	}
	fmt.Fprint(stdout, bulkReport(*mib, *rounds, servers, ms, res))
	return 0
}

// bulkRun prepares the file and each gale (with server, the YAML flow
// mapping's content of its server section), and downloads: every round
// once per server and mode, in a rotating order.
func bulkRun(dir, server string, mib, rounds int, scpu, ccpu string, servers []*bulkServer, ms []bulkMode, log io.Writer) (map[string][]bulkSample, error) {
	root := filepath.Join(dir, "site")
	if err := writeRandomFile(filepath.Join(root, "bulk.bin"), int64(mib)<<20); err != nil {
		return nil, err
	}
	cert, err := writeBenchCert(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, err
	}
	for _, sv := range servers {
		if err := sv.start(dir, server, root, scpu, cert); err != nil {
			return nil, err
		}
		defer sv.p.stop(5 * time.Second)
	}
	type job struct {
		sv *bulkServer
		m  bulkMode
	}
	var jobs []job
	for _, m := range ms {
		for _, sv := range servers {
			jobs = append(jobs, job{sv, m})
		}
	}
	clk := float64(clockTicks())
	want := int64(mib) << 20
	res := map[string][]bulkSample{}
	for r := 0; r < rounds+1; r++ { // round 0 warms the page cache and is dropped
		for _, j := range rotate(jobs, r) {
			s, err := j.sv.download(ccpu, j.m, want, clk)
			if err != nil {
				return nil, fmt.Errorf("%s %s round %d: %v", j.sv.Name, j.m.ID, r, err)
			}
			fmt.Fprintf(log, "round %d %-5s %-7s %7.0f MB/s %6.0f ms CPU\n", r, j.sv.Name, j.m.ID, s.MBps, s.CPUms)
			if r > 0 {
				res[j.sv.Name+" "+j.m.ID] = append(res[j.sv.Name+" "+j.m.ID], s)
			}
		}
	}
	return res, nil
}

// start builds gale when no binary was given, writes its config under
// dir and starts it pinned to scpu.
func (sv *bulkServer) start(dir, server, root, scpu string, cert *benchCert) error {
	dir = filepath.Join(dir, sv.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	if sv.bin == "" {
		if sv.bin, err = buildGale(findModuleRoot(), dir); err != nil {
			return err
		}
	}
	if sv.plain, err = freePort(); err != nil {
		return err
	}
	if sv.secure, err = freePort(); err != nil {
		return err
	}
	cfg := fmt.Sprintf("listen:\n  - \"127.0.0.1:%d\"\n  - address: \"127.0.0.1:%d\"\n    tls: {certificates: [{cert: %q, key: %q}]}\nserver: {%s}\nroutes:\n  - path: /\n    static: {root: %q}\n",
		sv.plain, sv.secure, cert.CertFile, cert.KeyFile, server, root)
	cfgPath := filepath.Join(dir, "gale.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	if sv.p, err = startProc([]string{sv.bin, "serve", "-c", cfgPath}, nil, scpu, filepath.Join(dir, "gale.log")); err != nil {
		return err
	}
	return waitReady(fmt.Sprintf("127.0.0.1:%d", sv.plain), sv.p, 10*time.Second)
}

// download downloads the file once with curl and measures it.
func (sv *bulkServer) download(ccpu string, m bulkMode, want int64, clk float64) (bulkSample, error) {
	port, scheme := sv.plain, "http"
	if m.TLS {
		port, scheme = sv.secure, "https"
	}
	pid := sv.p.pid()
	argv := append([]string{"-c", ccpu, "curl", "-sS", "-o", "/dev/null", "-w", "%{size_download} %{time_total} %{http_version}"}, m.Args...)
	argv = append(argv, fmt.Sprintf("%s://127.0.0.1:%d/bulk.bin", scheme, port))
	before, err := readProcStat(pid)
	if err != nil {
		return bulkSample{}, err
	}
	out, err := exec.Command("taskset", argv...).Output()
	if err != nil {
		return bulkSample{}, fmt.Errorf("curl: %v", err)
	}
	after, err := readProcStat(pid)
	if err != nil {
		return bulkSample{}, err
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return bulkSample{}, fmt.Errorf("curl printed %q", out)
	}
	size, _ := strconv.ParseInt(f[0], 10, 64)
	secs, _ := strconv.ParseFloat(f[1], 64)
	if size != want || f[2] != m.Want || secs <= 0 {
		return bulkSample{}, fmt.Errorf("curl got %d bytes over HTTP/%s, want %d over HTTP/%s", size, f[2], want, m.Want)
	}
	ticks := float64(after.Utime + after.Stime - before.Utime - before.Stime)
	return bulkSample{MBps: float64(size) / secs / 1e6, CPUms: ticks * 1000 / clk}, nil
}

// readProcStat reads /proc/PID/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// writeRandomFile writes n random bytes to path (incompressible, so that
// no encoding is chosen).
func writeRandomFile(path string, n int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bulkReport renders the medians, ranges and ratios as Markdown.
func bulkReport(mib, rounds int, servers []*bulkServer, ms []bulkMode, res map[string][]bulkSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d MiB file, %d rounds, medians (min–max)\n\n", mib, rounds)
	b.WriteString("| server | mode | MB/s | gale CPU ms per download |\n|---|---|---|---|\n")
	med := map[string]float64{}
	for _, sv := range servers {
		for _, m := range ms {
			k := sv.Name + " " + m.ID
			var mb, cpu []float64
			for _, s := range res[k] {
				mb = append(mb, s.MBps)
				cpu = append(cpu, s.CPUms)
			}
			sm, sc := summarize(mb), summarize(cpu)
			med[k] = sm.Median
			fmt.Fprintf(&b, "| %s | %s | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) |\n", sv.Name, m.ID, sm.Median, sm.Min, sm.Max, sc.Median, sc.Min, sc.Max)
		}
	}
	b.WriteString("\n")
	for _, sv := range servers {
		for _, r := range [][2]string{{"h2c", "h1"}, {"tls-h2", "tls-h1"}} {
			x, y := med[sv.Name+" "+r[0]], med[sv.Name+" "+r[1]]
			if x > 0 && y > 0 {
				fmt.Fprintf(&b, "- %s %s/%s: %.2f\n", sv.Name, r[0], r[1], x/y)
			}
		}
	}
	return b.String()
}
