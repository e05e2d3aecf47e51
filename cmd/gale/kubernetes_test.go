package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"gale/app"
	"gale/config"
)

const k8sDir = "../../examples/kubernetes"

// The parts of the manifests the tests read.
type (
	k8sObject struct {
		Kind     string                `yaml:"kind"`
		Metadata struct{ Name string } `yaml:"metadata"`
		Data     map[string]string     `yaml:"data"`
		Spec     struct {
			Template struct {
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
			Ports []struct {
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot bool `yaml:"runAsNonRoot"`
			RunAsUser    int  `yaml:"runAsUser"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []struct {
			Name      string                `yaml:"name"`
			ConfigMap struct{ Name string } `yaml:"configMap"`
		} `yaml:"volumes"`
	}
	container struct {
		Image           string   `yaml:"image"`
		ImagePullPolicy string   `yaml:"imagePullPolicy"`
		Args            []string `yaml:"args"`
		Ports           []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe probe `yaml:"readinessProbe"`
		LivenessProbe  probe `yaml:"livenessProbe"`
		Lifecycle      struct {
			PreStop struct {
				Sleep struct{ Seconds int } `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
		FailureThreshold int `yaml:"failureThreshold"`
	}
)

// readManifests decodes every document of every YAML file in dir by kind.
func readManifests(t *testing.T, dir string) map[string]k8sObject {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	out := map[string]k8sObject{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[o.Kind] = o
		}
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "Service"} {
		if _, ok := out[kind]; !ok {
			t.Fatalf("%s: no %s", dir, kind)
		}
	}
	return out
}

// TestKubernetesManifests checks the example manifests against the config
// their ConfigMap holds: the config loads and compiles, the probes ask for
// the config's health routes, on the port gale listens on, which the
// Service targets; the grace period covers the drain delay and the
// graceful stop; the pod runs as non-root on a read-only root file
// system with resource requests.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t, k8sDir)
	dep, cm, svc := m["Deployment"], m["ConfigMap"], m["Service"]
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The config is mounted from the ConfigMap where args point.
	var mount string
	for _, v := range pod.Volumes {
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name && v.ConfigMap.Name == cm.Metadata.Name {
				mount = vm.MountPath
			}
		}
	}
	var file string
	for i, a := range c.Args {
		if a == "-c" && i+1 < len(c.Args) {
			file = c.Args[i+1]
		}
	}
	if mount == "" || filepath.Dir(file) != mount {
		t.Fatalf("args %v do not read the config from the ConfigMap's mount %q", c.Args, mount)
	}
	text, ok := cm.Data[filepath.Base(file)]
	if !ok {
		t.Fatalf("the ConfigMap has no %s", filepath.Base(file))
	}
	cfg, err := config.Parse([]byte(text), "")
	if err != nil {
		t.Fatalf("the ConfigMap's %s: %v", filepath.Base(file), err)
	}
	if err := app.Check(cfg); err != nil {
		t.Fatalf("the ConfigMap's %s: %v", filepath.Base(file), err)
	}

	// Ports: the probes' and the Service's named port is the container
	// port gale listens on.
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	listening := map[int]bool{}
	for _, l := range cfg.Listen {
		_, port, err := net.SplitHostPort(l.Address)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(port)
		listening[n] = true
	}
	portOf := func(what, name string) {
		t.Helper()
		if n, ok := ports[name]; !ok || !listening[n] {
			t.Errorf("%s targets port %q (%d), on which the config does not listen (%v)", what, name, n, cfg.Listen)
		}
	}
	for _, p := range svc.Spec.Ports {
		portOf("the Service", p.TargetPort)
	}

	// Probes: the readiness probe asks a health ready route, the liveness
	// probe a health live route.
	healthRoute := func(path string) string {
		for _, r := range cfg.Routes {
			if r.Host == "" && r.Path == path {
				return r.Health
			}
		}
		return ""
	}
	for _, pr := range []struct {
		name string
		p    probe
		want string
		kind string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz", "ready"}, {"livenessProbe", c.LivenessProbe, "/livez", "live"}} {
		if pr.p.HTTPGet.Path != pr.want {
			t.Errorf("%s asks for %q, want %q", pr.name, pr.p.HTTPGet.Path, pr.want)
		}
		if k := healthRoute(pr.p.HTTPGet.Path); k != pr.kind {
			t.Errorf("%s asks for %q, which is not a health %s route (%q)", pr.name, pr.p.HTTPGet.Path, pr.kind, k)
		}
		portOf(pr.name, pr.p.HTTPGet.Port)
		// One slow answer must not take the pod out (the default, 3).
		if pr.p.FailureThreshold != 0 && pr.p.FailureThreshold < 3 {
			t.Errorf("%s failureThreshold %d, want at least 3", pr.name, pr.p.FailureThreshold)
		}
	}

	// A locally built image (the Dockerfile's) must not be pulled: with
	// a :latest tag the default policy is Always.
	if strings.HasSuffix(c.Image, ":latest") && c.ImagePullPolicy != "IfNotPresent" && c.ImagePullPolicy != "Never" {
		t.Errorf("image %s with imagePullPolicy %q: a locally built image fails to pull; want IfNotPresent", c.Image, c.ImagePullPolicy)
	}

	// Stopping: a delay before connections are refused (gale's drain, or
	// a preStop sleep), and a grace period that covers it and the graceful
	// stop, with room for the process to exit.
	pre := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	drain := cfg.Server.Timeouts.Drain
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if pre+drain <= 0 {
		t.Error("no drain delay: endpoints are removed while the pod already refuses connections")
	}
	if grace <= pre+drain+cfg.Server.Timeouts.Shutdown {
		t.Errorf("terminationGracePeriodSeconds %s does not cover preStop %s + server.timeouts.drain %s + shutdown %s", grace, pre, drain, cfg.Server.Timeouts.Shutdown)
	}

	// Running: non-root, read-only root, requests set, nothing written
	// to the file system.
	if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == 0 {
		t.Error("the pod may run as root")
	}
	if !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("the container's root file system is writable or it may escalate privileges")
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
		t.Error("no cpu and memory requests")
	}
	if cpu, err := strconv.Atoi(c.Resources.Requests["cpu"]); err == nil && cfg.Server.EventLoops != cpu {
		t.Errorf("server.event_loops %d, want one per requested CPU (%d)", cfg.Server.EventLoops, cpu)
	}
	if p := cfg.AccessLog.Path; p != "" && p != "-" {
		t.Errorf("access_log.path %q: the root file system is read-only; log to stdout", p)
	}
}

// TestDockerfile checks the Dockerfile's shape (a build stage, then a
// final stage running as a non-root user) and that its build command
// makes a static binary, which the final image needs: it has no libc.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)); n < 2 {
		t.Errorf("%d FROM lines, want a multi-stage build", n)
	}
	users := regexp.MustCompile(`(?m)^USER (\S+)`).FindAllStringSubmatch(text, -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || strings.HasPrefix(users[len(users)-1][1], "root") {
		t.Errorf("the final stage does not set a non-root USER: %v", users)
	}
	build := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`).FindStringSubmatch(text)
	if build == nil {
		t.Fatal("no RUN CGO_ENABLED=0 go build line")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	out := filepath.Join(t.TempDir(), "gale")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked (it has an ELF interpreter)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the binary needs %v", libs)
	}
}
