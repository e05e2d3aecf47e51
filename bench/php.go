package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The php-hello workload: a hello-world PHP script behind each server,
// every server talking FastCGI to the same PHP-FPM pool, which the
// harness starts once per run on the client CPUs (beside wrk, like the
// proxy upstream), so that the server CPUs run the server alone. The
// pool's CPU time during each measured run is recorded apart from the
// server's (php_fpm_cpu_us_per_req).

// phpScript is the script; its output is the php-hello fixture.
const (
	phpScript   = "<?php echo \"Hello, World!\\n\";\n"
	phpBody     = "Hello, World!\n"
	fpmChildren = 8 // pm.max_children of the bench pool (pm = static)
	// fpmConns is how many connections a server keeps to the pool:
	// gale's max_conns, at most the pool's workers (each kept connection
	// holds one); nginx's keepalive cache must stay below the workers, or
	// its kept connections would hold every worker while new ones wait in
	// the pool's backlog.
	fpmConns      = fpmChildren
	nginxFPMCache = fpmChildren / 2
)

// phpWorkloads are the workloads that need PHP-FPM, measured only when
// named (-workloads php-hello).
var phpWorkloads = []workload{
	{ID: "php-hello", Path: "/php/hello.php", Fixture: "php-hello", PHP: true, Desc: "hello-world PHP script through one PHP-FPM pool (FastCGI)"},
}

// writePHPFixtures adds the script and its expected output.
func writePHPFixtures(fs *fixtureSet, add func(string, []byte) error) error {
	if err := os.MkdirAll(filepath.Join(fs.Root, "php"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(fs.Root, "php", "hello.php"), []byte(phpScript), 0o644); err != nil {
		return err
	}
	return add("php-hello", []byte(phpBody))
}

// needsFPM reports whether any workload runs PHP.
func needsFPM(ws []workload) bool {
	for _, w := range ws {
		if w.PHP {
			return true
		}
	}
	return false
}

// findFPM returns the php-fpm binary, or "".
func findFPM() string {
	for _, name := range []string{"php-fpm", "php-fpm8.4", "php-fpm8.3", "php-fpm8.2", "php-fpm8.1"} {
		if p := findBinary(name); p != "" {
			return p
		}
	}
	return ""
}

// startFPM starts the PHP-FPM pool, pinned to the client CPUs, listening
// on a unix socket in the output directory.
func (r *runner) startFPM() error {
	bin := findFPM()
	if bin == "" {
		return fmt.Errorf("php-fpm not found (apt-get install php-fpm)")
	}
	dir := filepath.Join(r.out, "php-fpm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.fpmSock = filepath.Join(dir, "fpm.sock")
	conf := fmt.Sprintf(`[global]
error_log = %[1]s/error.log
pid = %[1]s/fpm.pid
daemonize = no
[bench]
listen = %[2]s
listen.backlog = 4096
pm = static
pm.max_children = %[3]d
pm.max_requests = 0
php_admin_value[output_buffering] = 0
`, dir, r.fpmSock, fpmChildren)
	file := filepath.Join(dir, "fpm.conf")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		return err
	}
	// -n: no php.ini, so the run does not depend on the machine's; -R:
	// allowed to run as root (the bench may).
	r.fpmArgv = []string{bin, "-F", "-O", "-R", "-n", "-y", file}
	p, err := startProc(r.fpmArgv, nil, r.opts.ClientCPUs, filepath.Join(dir, "stderr.log"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", r.fpmSock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) || p.exited() {
			p.stop(2 * time.Second)
			return fmt.Errorf("php-fpm did not listen on %s: %s", r.fpmSock, p.logTail(400))
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.fpm = p
	if out, err := exec.Command(bin, "-v").Output(); err == nil {
		r.fpmVersion = firstLine(string(out))
	}
	return nil
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// fpmSample reads the pool's process tree, or a zero sample without one.
func (r *runner) fpmSample() treeSample {
	if r.fpm == nil {
		return treeSample{}
	}
	s, _ := sampleTree(r.fpm.pid())
	return s
}

// fpmCPU records in m what the pool spent between s0 and s1.
func (r *runner) fpmCPU(m *measurement, s0, s1 treeSample) {
	sec := r.treeCPUSeconds(s0, s1)
	m.FPMCPUSeconds = sec
	if m.Wrk != nil && m.Wrk.Requests > 0 {
		m.FPMCPUUsPerReq = sec * 1e6 / float64(m.Wrk.Requests)
	}
}

// treeCPUSeconds is the CPU time a helper's process tree spent between
// s0 and s1: schedstat's nanoseconds unless they fall short of the ticks.
func (r *runner) treeCPUSeconds(s0, s1 treeSample) float64 {
	sec := float64(s1.CPUTicks-s0.CPUTicks) / float64(r.clkTck)
	if s0.CPUNanos > 0 && s1.CPUNanos >= s0.CPUNanos {
		if ns := float64(s1.CPUNanos-s0.CPUNanos) / 1e9; ns >= sec-2/float64(r.clkTck) {
			sec = ns
		}
	}
	return sec
}

// nginxPHP renders nginx's location and upstream for php-hello: the
// parameters of Debian's fastcgi_params, SCRIPT_FILENAME, and kept
// connections (fastcgi_keep_conn).
func nginxPHP(sock string) (upstream, location string) {
	upstream = fmt.Sprintf(`upstream bench_fpm {
        server unix:%s;
        keepalive %d;
        keepalive_requests 1000000000;
        keepalive_timeout 120s;
    }`, sock, nginxFPMCache)
	location = `location /php/ {
            fastcgi_pass bench_fpm;
            fastcgi_keep_conn on;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param SCRIPT_NAME $fastcgi_script_name;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param DOCUMENT_URI $document_uri;
            fastcgi_param DOCUMENT_ROOT $document_root;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param REQUEST_SCHEME $scheme;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param SERVER_SOFTWARE nginx;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param REMOTE_PORT $remote_port;
            fastcgi_param SERVER_ADDR $server_addr;
            fastcgi_param SERVER_PORT $server_port;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param REDIRECT_STATUS 200;
        }`
	return upstream, location
}

// caddyPHP is Caddy's route for php-hello: reverse_proxy with the
// fastcgi transport, as its php_fastcgi directive sets it up (Caddy's
// FastCGI transport opens a connection per request).
func caddyPHP(root, sock string) map[string]any {
	type obj = map[string]any
	return obj{
		"match": []obj{{"path": []string{"/php/*"}}},
		"handle": []obj{{"handler": "reverse_proxy", "upstreams": []obj{{"dial": "unix/" + sock}},
			"transport": obj{"protocol": "fastcgi", "root": root, "split_path": []string{".php"}}}},
		"terminal": true,
	}
}
