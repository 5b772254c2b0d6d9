package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"listingproxy/config"
)

// The fleet's deployment files (issue 14): docker compose in deploy/compose,
// Kubernetes in deploy/kubernetes. No container engine or cluster runs here,
// so these tests check what would otherwise fail only at deploy time: the
// configuration each replica runs is valid with exactly the environment the
// files give it, the commands are ones serve accepts, the probes ask the
// admin listener that configuration opens, the grace periods cover the
// drain, and names (images, services, ports) agree across the files.

const (
	composeDir = "../../deploy/compose"
	k8sDir     = "../../deploy/kubernetes"
)

// k8sObject is the part of a Kubernetes manifest these checks read.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []servicePort `yaml:"ports"` // a Service's
	} `yaml:"spec"`
	raw map[string]any
}

type servicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort any    `yaml:"targetPort"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
	Containers                    []container `yaml:"containers"`
	Volumes                       []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		ValueFrom *struct {
			SecretKeyRef *struct{ Name, Key string } `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

// readK8s returns every object of the files kustomization.yaml lists, and
// checks that it lists every manifest of the directory.
func readK8s(t *testing.T) []k8sObject {
	t.Helper()
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	src, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	var onDisk []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			onDisk = append(onDisk, b)
		}
	}
	listed := slices.Sorted(slices.Values(kust.Resources))
	if diff := cmp.Diff(onDisk, listed); diff != "" {
		t.Errorf("kustomization.yaml resources vs the directory's manifests (-files +listed):\n%s", diff)
	}
	var objs []k8sObject
	for _, name := range kust.Resources {
		f, err := os.Open(filepath.Join(k8sDir, name))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		for i := 1; ; i++ {
			var node yaml.Node
			if err := dec.Decode(&node); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s, document %d: %v", name, i, err)
			}
			var o k8sObject
			if err := node.Decode(&o); err != nil {
				t.Fatalf("%s, document %d: %v", name, i, err)
			}
			if err := node.Decode(&o.raw); err != nil {
				t.Fatalf("%s, document %d: %v", name, i, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s, document %d: want apiVersion, kind and metadata.name", name, i)
			}
			objs = append(objs, o)
		}
		f.Close()
	}
	return objs
}

func findObject(t *testing.T, objs []k8sObject, kind, name string) k8sObject {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %q in deploy/kubernetes", kind, name)
	return k8sObject{}
}

// serviceSelector is a Service's spec.selector (a flat map, unlike a
// Deployment's).
func serviceSelector(o k8sObject) map[string]string {
	spec, _ := o.raw["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	out := map[string]string{}
	for k, v := range sel {
		out[k], _ = v.(string)
	}
	return out
}

// envRecorder is a getenv over env that records the names asked for.
type envRecorder struct {
	env   map[string]string
	asked map[string]bool
}

func (e *envRecorder) getenv(name string) string {
	if e.asked == nil {
		e.asked = map[string]bool{}
	}
	e.asked[name] = true
	return e.env[name]
}

// missing is the variables asked for but not provided, sorted.
func (e *envRecorder) missing() []string {
	var out []string
	for name := range e.asked {
		if _, ok := e.env[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// serveFlags returns the values of -config, -listen and -admin-listen in
// args (serve's arguments, "serve" first), after checking that serve's own
// flag parsing accepts them all.
func serveFlags(t *testing.T, where string, args []string) (cfgPath, listen, admin string) {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("%s: arguments %q: want serve first", where, args)
	}
	for i := 1; i+1 < len(args); i++ {
		switch args[i] {
		case "-config":
			cfgPath = args[i+1]
		case "-listen":
			listen = args[i+1]
		case "-admin-listen":
			admin = args[i+1]
		}
	}
	// With -h appended, serve parses them all and stops before anything else.
	err := run(context.Background(), append(append([]string{"listingproxy"}, args...), "-h"), noEnv, nil, io.Discard, io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("%s: serve's flags reject %q: %v", where, args, err)
	}
	if cfgPath == "" {
		t.Errorf("%s: arguments %q: no -config", where, args)
	}
	return cfgPath, listen, admin
}

// port is the port of a listen address.
func port(t *testing.T, where, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s: listen address %q has no port", where, addr)
	}
	return n
}

// probePort resolves a probe's port (a number or a container port's name).
func probePort(c container, p any) int {
	switch v := p.(type) {
	case int:
		return v
	case string:
		for _, cp := range c.Ports {
			if cp.Name == v {
				return cp.ContainerPort
			}
		}
	}
	return -1
}

// TestKubernetesManifests: the Deployment's configuration (the ConfigMap)
// loads with exactly the environment the ConfigMap and Secret give it; its
// probes ask that configuration's admin listener; the grace period covers
// the drain; the Services select the pods and name real ports; Redis is
// there under the name the configuration dials.
func TestKubernetesManifests(t *testing.T) {
	objs := readK8s(t)
	dep := findObject(t, objs, "Deployment", "listingproxy")
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment listingproxy: %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("Deployment listingproxy: replicas %v, want a fleet (at least 2)", dep.Spec.Replicas)
	}
	if diff := cmp.Diff(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels); diff != "" {
		t.Errorf("Deployment selector vs pod labels:\n%s", diff)
	}
	if len(c.Command) != 0 {
		t.Errorf("container command %q: want none, so the image's entrypoint (the binary) runs the args", c.Command)
	}
	cfgPath, listen, adminListen := serveFlags(t, "Deployment listingproxy", c.Args)

	// The configuration file comes from the ConfigMap mounted at its directory.
	var cfgMap string
	for _, m := range c.VolumeMounts {
		if m.MountPath != path.Dir(cfgPath) {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				cfgMap = v.ConfigMap.Name
			}
		}
	}
	if cfgMap == "" {
		t.Fatalf("no ConfigMap volume mounted at %s (the directory of -config %s)", path.Dir(cfgPath), cfgPath)
	}
	cm := findObject(t, objs, "ConfigMap", cfgMap)
	cfgText, ok := cm.Data[path.Base(cfgPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cfgMap, path.Base(cfgPath))
	}

	// Its environment: envFrom's ConfigMaps and Secrets, and env.
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			maps.Copy(env, findObject(t, objs, "ConfigMap", ef.ConfigMapRef.Name).Data)
		case ef.SecretRef != nil:
			s := findObject(t, objs, "Secret", ef.SecretRef.Name)
			maps.Copy(env, s.StringData)
			maps.Copy(env, s.Data)
		}
	}
	for _, e := range c.Env {
		env[e.Name] = "from env"
	}
	rec := &envRecorder{env: env}
	cfg, err := config.Parse("ConfigMap "+cfgMap, []byte(cfgText), rec.getenv)
	if err != nil {
		t.Fatalf("the Deployment's configuration does not load with its environment: %v", err)
	}
	if m := rec.missing(); len(m) > 0 {
		t.Errorf("the configuration names %v, which neither the ConfigMaps nor the Secret provide", m)
	}
	if cfg.Cache.Shared == nil {
		t.Errorf("the configuration has no cache.shared: a fleet shares its second tier")
	}
	if listen == "" {
		listen = cfg.Listen
	}
	if adminListen == "" {
		adminListen = cfg.AdminListen
	}
	adminPort := port(t, "admin_listen", adminListen)
	apiPort := port(t, "listen", listen)
	if h, _, _ := net.SplitHostPort(adminListen); h == "127.0.0.1" || h == "localhost" {
		t.Errorf("admin listener %s: on loopback the kubelet's probes cannot reach it", adminListen)
	}

	for name, p := range map[string]*probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		want := map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet on %s", name, want)
			continue
		}
		if p.HTTPGet.Path != want || probePort(c, p.HTTPGet.Port) != adminPort {
			t.Errorf("%s: GET %s on port %v, want %s on the admin port %d", name, p.HTTPGet.Path, p.HTTPGet.Port, want, adminPort)
		}
	}
	drain, grace := cfg.Server.DrainDelay.D(), cfg.Server.ShutdownGrace.D()
	if tg := pod.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second <= drain+grace {
		t.Errorf("terminationGracePeriodSeconds %s: want more than drain_delay + shutdown_grace (%s)", fmtIntPtr(tg), drain+grace)
	}
	if r := c.ReadinessProbe; r != nil && time.Duration(r.PeriodSeconds*max(r.FailureThreshold, 1))*time.Second > drain {
		t.Errorf("readiness fails after %ds x %d, longer than drain_delay %s: traffic would still arrive after the drain",
			r.PeriodSeconds, r.FailureThreshold, drain)
	}
	containerPorts := map[int]string{}
	for _, p := range c.Ports {
		containerPorts[p.ContainerPort] = p.Name
	}
	for _, p := range []int{apiPort, adminPort} {
		if _, ok := containerPorts[p]; !ok {
			t.Errorf("container ports %v lack %d (the configuration's listeners)", c.Ports, p)
		}
	}

	// Every Service selects some pods and forwards to ports they have.
	pods := map[string]k8sObject{}
	for _, o := range objs {
		if o.Kind == "Deployment" {
			pods[o.Metadata.Name] = o
		}
	}
	for _, svc := range objs {
		if svc.Kind != "Service" {
			continue
		}
		sel := serviceSelector(svc)
		var target *k8sObject
		for _, d := range pods {
			if len(sel) > 0 && mapSubset(sel, d.Spec.Template.Metadata.Labels) {
				target = &d
			}
		}
		if target == nil {
			t.Errorf("Service %s: selector %v matches no Deployment's pods", svc.Metadata.Name, sel)
			continue
		}
		for _, p := range svc.Spec.Ports {
			if !slices.ContainsFunc(target.Spec.Template.Spec.Containers, func(tc container) bool { return probePort(tc, p.TargetPort) >= 0 }) {
				t.Errorf("Service %s: targetPort %v is no port of Deployment %s", svc.Metadata.Name, p.TargetPort, target.Metadata.Name)
			}
		}
	}

	// The Redis the configuration dials is a Service of the manifests, and
	// whatever it reads from a Secret exists.
	for _, addr := range cfg.Cache.Shared.Addrs {
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("cache.shared.addrs %q: %v", addr, err)
		}
		svc := findObject(t, objs, "Service", host)
		if n, _ := strconv.Atoi(p); !slices.ContainsFunc(svc.Spec.Ports, func(sp servicePort) bool { return sp.Port == n }) {
			t.Errorf("Service %s has no port %s (cache.shared.addrs %s)", host, p, addr)
		}
	}
	for _, rc := range findObject(t, objs, "Deployment", "redis").Spec.Template.Spec.Containers {
		checkRedisArgs(t, "Deployment redis", append(slices.Clone(rc.Command), rc.Args...))
		for _, e := range rc.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				s := findObject(t, objs, "Secret", e.ValueFrom.SecretKeyRef.Name)
				if _, ok := s.StringData[e.ValueFrom.SecretKeyRef.Key]; !ok {
					t.Errorf("Deployment redis: env %s reads key %s, which Secret %s lacks", e.Name, e.ValueFrom.SecretKeyRef.Key, s.Metadata.Name)
				}
			}
		}
	}

	// The same image as the compose file's replicas.
	for _, img := range composeImages(t) {
		if img != c.Image {
			t.Errorf("image %s in compose.yaml, %s in deployment.yaml: want one name", img, c.Image)
		}
	}
}

// checkRedisArgs: the shared tier's Redis is a cache with a memory cap that
// evicts only keys with an expiry (entries, leases), never the fleet's purge
// records, which have none (cache/redistier).
func checkRedisArgs(t *testing.T, where string, args []string) {
	t.Helper()
	i := slices.Index(args, "--maxmemory-policy")
	if i < 0 || i+1 >= len(args) || !strings.HasPrefix(args[i+1], "volatile-") {
		t.Errorf("%s: arguments %q: want --maxmemory-policy volatile-lru (or another volatile-*): an allkeys policy may evict the purge records", where, args)
	}
	if !slices.Contains(args, "--maxmemory") {
		t.Errorf("%s: arguments %q: want a --maxmemory cap", where, args)
	}
}

func fmtIntPtr(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}

func mapSubset(sub, m map[string]string) bool {
	for k, v := range sub {
		if m[k] != v {
			return false
		}
	}
	return true
}

// composeService is the part of a compose service these checks read.
type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command         []string          `yaml:"command"`
	Volumes         []string          `yaml:"volumes"`
	Environment     map[string]string `yaml:"environment"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
	Ports           []string          `yaml:"ports"`
}

func readCompose(t *testing.T) map[string]composeService {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(src, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return f.Services
}

// composeImages is the image of every listingproxy replica of compose.yaml.
func composeImages(t *testing.T) []string {
	var out []string
	for name, s := range readCompose(t) {
		if strings.HasPrefix(name, "listingproxy") {
			out = append(out, s.Image)
		}
	}
	return out
}

// composeVar is compose's interpolation of ${VAR:-default} with VAR unset.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// TestComposeFile: three replicas behind nginx, each running a
// configuration that loads with exactly the environment the file gives it
// and dials services of the file; the commands are serve's; nginx's
// upstreams are the replicas' API ports; the stop grace covers the drain.
func TestComposeFile(t *testing.T) {
	services := readCompose(t)
	hasService := func(host string) bool { _, ok := services[host]; return ok }
	var replicas []string
	for name, s := range services {
		if s.Build != nil {
			df := filepath.Join(composeDir, s.Build.Context, s.Build.Dockerfile)
			if _, err := os.Stat(df); err != nil {
				t.Errorf("service %s builds with %s: %v", name, df, err)
			}
		}
		if strings.HasPrefix(name, "listingproxy") {
			replicas = append(replicas, name)
		}
	}
	sort.Strings(replicas)
	if len(replicas) != 3 {
		t.Errorf("listingproxy replicas %v: want 3", replicas)
	}
	for _, want := range []string{"lb", "redis", "legacy-crm"} {
		if !hasService(want) {
			t.Errorf("no service %s", want)
		}
	}
	checkRedisArgs(t, "service redis", services["redis"].Command)

	var apiPort int
	for _, name := range replicas {
		s := services[name]
		where := "service " + name
		cfgPath, listen, adminListen := serveFlags(t, where, s.Command)
		var hostFile string
		for _, v := range s.Volumes {
			if parts := strings.Split(v, ":"); len(parts) >= 2 && parts[1] == cfgPath {
				hostFile = filepath.Join(composeDir, parts[0])
			}
		}
		if hostFile == "" {
			t.Fatalf("%s: nothing mounted at -config %s", where, cfgPath)
		}
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = composeVar.ReplaceAllString(v, "$2")
		}
		rec := &envRecorder{env: env}
		cfg, err := config.Load(hostFile, rec.getenv)
		if err != nil {
			t.Fatalf("%s: its configuration does not load with its environment: %v", where, err)
		}
		if m := rec.missing(); len(m) > 0 {
			t.Errorf("%s: the configuration names %v, which its environment lacks", where, m)
		}
		if cfg.Cache.Shared == nil {
			t.Fatalf("%s: no cache.shared", where)
		}
		for _, a := range cfg.Cache.Shared.Addrs {
			if host, _, _ := net.SplitHostPort(a); !hasService(host) {
				t.Errorf("%s: cache.shared.addrs %s is no service of the file", where, a)
			}
		}
		for _, b := range cfg.Backends {
			if b.CRM == nil {
				continue
			}
			if u, err := url.Parse(b.CRM.URL); err != nil || !hasService(u.Hostname()) {
				t.Errorf("%s: backend URL %s is no service of the file", where, b.CRM.URL)
			}
		}
		if listen == "" {
			listen = cfg.Listen
		}
		if adminListen == "" {
			adminListen = cfg.AdminListen
		}
		apiPort = port(t, where, listen)
		if h, _, _ := net.SplitHostPort(listen); h != "" && h != "0.0.0.0" {
			t.Errorf("%s: listen %s: nginx, in another container, cannot reach it", where, listen)
		}
		port(t, where, adminListen)
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if drain := cfg.Server.DrainDelay.D() + cfg.Server.ShutdownGrace.D(); err != nil || grace <= drain {
			t.Errorf("%s: stop_grace_period %q: want more than drain_delay + shutdown_grace (%s)", where, s.StopGracePeriod, drain)
		}
	}

	// nginx, with the file compose mounts, balances over every replica.
	var nginxConf string
	for _, v := range services["lb"].Volumes {
		if parts := strings.Split(v, ":"); len(parts) >= 2 && parts[1] == "/etc/nginx/nginx.conf" {
			nginxConf = filepath.Join(composeDir, parts[0])
		}
	}
	src, err := os.ReadFile(nginxConf)
	if err != nil {
		t.Fatalf("lb: nginx.conf: %v", err)
	}
	var upstreams []string
	for _, m := range regexp.MustCompile(`(?m)^\s*server\s+([\w.-]+:\d+)`).FindAllStringSubmatch(string(src), -1) {
		upstreams = append(upstreams, m[1])
	}
	var want []string
	for _, r := range replicas {
		want = append(want, r+":"+strconv.Itoa(apiPort))
	}
	if diff := cmp.Diff(want, upstreams); diff != "" {
		t.Errorf("nginx.conf upstream servers vs the replicas' API (-want +got):\n%s", diff)
	}
}
