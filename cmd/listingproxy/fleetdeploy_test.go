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
	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"

	"listingproxy/config"
)

// The fleet's deployment files: docker compose in deploy/compose,
// Kubernetes in deploy/k8s (a kustomize base and the dev and prod overlays).
// No container engine or cluster runs here, so these tests check what would
// otherwise fail only at deploy time: the configuration each replica runs is
// valid with exactly the environment the files (and the secrets
// deploy/README.md tells the operator to create) give it, the commands are
// ones serve accepts, the probes ask the admin listener that configuration
// opens, the grace periods cover the drain, names (images, services, ports)
// agree across the files, and no demo credential is shipped. CI also runs
// kustomize build on each overlay and docker-compose config on the compose
// file (.ci/run).

const (
	composeDir = "../../deploy/compose"
	k8sDir     = "../../deploy/k8s"
	deployDoc  = "../../deploy/README.md"
	// k8sSecret is the Secret the Deployment reads, created by the operator
	// with the command deploy/README.md gives, never part of the manifests.
	k8sSecret = "listingproxy-secrets"
)

// k8sOverlays are the shapes under deploy/k8s/overlays and the fewest
// replicas each must run.
var k8sOverlays = map[string]int{"dev": 1, "prod": 2}

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

// kustomization is the part of a kustomization.yaml this emulation of
// kustomize build understands: resources (files and directories),
// ConfigMap generators (create and merge), replicas and images. Anything
// else fails the test, so that the checks never read manifests that differ
// from what kustomize builds (CI runs kustomize build itself too).
type kustomization struct {
	APIVersion         string           `yaml:"apiVersion"`
	Kind               string           `yaml:"kind"`
	Namespace          string           `yaml:"namespace"`
	Labels             []any            `yaml:"labels"`
	Resources          []string         `yaml:"resources"`
	ConfigMapGenerator []configMapGen   `yaml:"configMapGenerator"`
	Replicas           []kustomizeCount `yaml:"replicas"`
	Images             []kustomizeImage `yaml:"images"`
	Other              map[string]any   `yaml:",inline"`
}

type configMapGen struct {
	Name     string   `yaml:"name"`
	Behavior string   `yaml:"behavior"`
	Files    []string `yaml:"files"`
	Literals []string `yaml:"literals"`
}

type kustomizeCount struct {
	Name  string `yaml:"name"`
	Count int    `yaml:"count"`
}

type kustomizeImage struct {
	Name    string `yaml:"name"`
	NewName string `yaml:"newName"`
	NewTag  string `yaml:"newTag"`
	Digest  string `yaml:"digest"`
}

// kustomize returns the objects the kustomization in dir builds (generated
// ConfigMaps keep their names, without kustomize's hash suffix), and checks
// that it lists every manifest of its directory.
func kustomize(t *testing.T, dir string) []k8sObject {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(src, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if len(k.Other) > 0 {
		t.Fatalf("%s/kustomization.yaml: %v: not understood by this test's emulation of kustomize; extend kustomize()", dir, slices.Sorted(maps.Keys(k.Other)))
	}
	used := map[string]bool{"kustomization.yaml": true}
	var objs []k8sObject
	for _, res := range k.Resources {
		p := filepath.Join(dir, res)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			objs = append(objs, kustomize(t, p)...)
			continue
		}
		used[res] = true
		objs = append(objs, readManifests(t, p)...)
	}
	for _, g := range k.ConfigMapGenerator {
		data := map[string]string{}
		for _, f := range g.Files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatalf("%s: configMapGenerator %s: %v", dir, g.Name, err)
			}
			used[f] = true
			data[filepath.Base(f)] = string(b)
		}
		for _, l := range g.Literals {
			key, value, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("%s: configMapGenerator %s: literal %q is not KEY=VALUE", dir, g.Name, l)
			}
			data[key] = value
		}
		i := slices.IndexFunc(objs, func(o k8sObject) bool { return o.Kind == "ConfigMap" && o.Metadata.Name == g.Name })
		switch g.Behavior {
		case "", "create":
			if i >= 0 {
				t.Fatalf("%s: configMapGenerator %s: the ConfigMap exists already (behavior merge or replace?)", dir, g.Name)
			}
			var o k8sObject
			o.APIVersion, o.Kind, o.Metadata.Name, o.Data = "v1", "ConfigMap", g.Name, data
			objs = append(objs, o)
		case "merge":
			if i < 0 {
				t.Fatalf("%s: configMapGenerator %s merges into no ConfigMap of its resources", dir, g.Name)
			}
			merged := map[string]string{}
			maps.Copy(merged, objs[i].Data)
			maps.Copy(merged, data)
			objs[i].Data = merged
		default:
			t.Fatalf("%s: configMapGenerator %s: behavior %q not understood by this test", dir, g.Name, g.Behavior)
		}
	}
	for _, r := range k.Replicas {
		i := slices.IndexFunc(objs, func(o k8sObject) bool { return o.Kind == "Deployment" && o.Metadata.Name == r.Name })
		if i < 0 {
			t.Fatalf("%s: replicas of %s, which is no Deployment of its resources", dir, r.Name)
		}
		objs[i].Spec.Replicas = &r.Count
	}
	for _, img := range k.Images {
		if img.NewName == "" && img.NewTag == "" && img.Digest == "" {
			continue
		}
		found := false
		for i := range objs {
			cs := slices.Clone(objs[i].Spec.Template.Spec.Containers)
			for j, c := range cs {
				if name, _, _ := strings.Cut(c.Image, ":"); name != img.Name {
					continue
				}
				found = true
				ref := img.Name
				if img.NewName != "" {
					ref = img.NewName
				}
				switch {
				case img.Digest != "":
					ref += "@" + img.Digest
				case img.NewTag != "":
					ref += ":" + img.NewTag
				}
				cs[j].Image = ref
			}
			objs[i].Spec.Template.Spec.Containers = cs
		}
		if !found {
			t.Errorf("%s: images: no container runs image %s", dir, img.Name)
		}
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if b := filepath.Base(f); !used[b] {
			t.Errorf("%s: %s is neither a resource nor a generator's file of kustomization.yaml", dir, b)
		}
	}
	return objs
}

// readManifests decodes every object of a manifest file.
func readManifests(t *testing.T, file string) []k8sObject {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []k8sObject
	dec := yaml.NewDecoder(f)
	for i := 1; ; i++ {
		var node yaml.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s, document %d: %v", file, i, err)
		}
		var o k8sObject
		if err := node.Decode(&o); err != nil {
			t.Fatalf("%s, document %d: %v", file, i, err)
		}
		if err := node.Decode(&o.raw); err != nil {
			t.Fatalf("%s, document %d: %v", file, i, err)
		}
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Errorf("%s, document %d: want apiVersion, kind and metadata.name", file, i)
		}
		objs = append(objs, o)
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
	t.Fatalf("no %s %q in the manifests", kind, name)
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

// TestKubernetesManifests: for each overlay, the Deployment's configuration
// (the generated ConfigMap) loads with exactly the environment the
// ConfigMaps and the documented Secret give it; its probes ask that
// configuration's admin listener; the grace period covers the drain; the
// Services select the pods and name real ports; a Redis named by a bare
// host is a Service of the overlay; no Secret is in the manifests; the
// image is the user's own, mapped by the overlay.
func TestKubernetesManifests(t *testing.T) {
	secret := documentedSecretKeys(t)
	for overlay, minReplicas := range k8sOverlays {
		t.Run(overlay, func(t *testing.T) {
			checkKubernetesOverlay(t, kustomize(t, filepath.Join(k8sDir, "overlays", overlay)), secret, minReplicas)
		})
	}
	// The base names the image the compose file builds; the overlays map it
	// to the user's registry (checked per overlay).
	base := kustomize(t, filepath.Join(k8sDir, "base"))
	baseImage := findObject(t, base, "Deployment", "listingproxy").Spec.Template.Spec.Containers[0].Image
	for _, img := range composeImages(t) {
		if img != baseImage {
			t.Errorf("image %s in compose.yaml, %s in deploy/k8s/base: want one name (your build)", img, baseImage)
		}
	}
}

// documentedSecretKeys are the keys of the Secret k8sSecret that the
// command in deploy/README.md creates, each with a stand-in value (a valid
// bcrypt hash for a *_BCRYPT key).
func documentedSecretKeys(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(deployDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	i := strings.Index(doc, "create secret generic "+k8sSecret)
	if i < 0 {
		t.Fatalf("deploy/README.md gives no command that creates the Secret %s", k8sSecret)
	}
	cmd := doc[i:]
	if end := strings.Index(cmd, "```"); end >= 0 {
		cmd = cmd[:end]
	}
	keys := map[string]string{}
	for _, m := range regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9_]+)=`).FindAllStringSubmatch(cmd, -1) {
		keys[m[1]] = standInSecret(t, m[1])
	}
	if len(keys) == 0 {
		t.Fatalf("deploy/README.md's command for %s names no key (--from-literal=KEY=...)", k8sSecret)
	}
	return keys
}

// standInSecret is a value for a secret the operator provides: a valid
// bcrypt hash for a *_BCRYPT name, a word otherwise.
func standInSecret(t *testing.T, name string) string {
	t.Helper()
	if strings.HasSuffix(name, "_BCRYPT") {
		h, err := bcrypt.GenerateFromPassword([]byte("stand-in"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	return "stand-in-" + strings.ToLower(name)
}

func checkKubernetesOverlay(t *testing.T, objs []k8sObject, secret map[string]string, minReplicas int) {
	for _, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("Secret %s is in the manifests: secrets are created by the operator (deploy/README.md), never committed", o.Metadata.Name)
		}
	}
	dep := findObject(t, objs, "Deployment", "listingproxy")
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("Deployment listingproxy: %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < minReplicas {
		t.Errorf("Deployment listingproxy: replicas %s, want at least %d", fmtIntPtr(dep.Spec.Replicas), minReplicas)
	}
	if name, _, _ := strings.Cut(c.Image, ":"); !strings.Contains(name, "/") {
		t.Errorf("image %s: the overlay should map it to your registry (images: newName)", c.Image)
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
			if ef.SecretRef.Name != k8sSecret {
				t.Errorf("envFrom Secret %s: deploy/README.md documents %s only", ef.SecretRef.Name, k8sSecret)
			}
			maps.Copy(env, secret)
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
		t.Errorf("the configuration names %v, which neither the ConfigMaps nor the documented Secret provide", m)
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

	// The Redis the configuration dials: a bare host name is a Service of
	// the overlay (and its Redis a cache that keeps the purge records); a
	// qualified one is the user's own Redis.
	for _, addr := range cfg.Cache.Shared.Addrs {
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("cache.shared.addrs %q: %v", addr, err)
		}
		if strings.Contains(host, ".") {
			continue
		}
		svc := findObject(t, objs, "Service", host)
		if n, _ := strconv.Atoi(p); !slices.ContainsFunc(svc.Spec.Ports, func(sp servicePort) bool { return sp.Port == n }) {
			t.Errorf("Service %s has no port %s (cache.shared.addrs %s)", host, p, addr)
		}
		for _, rc := range findObject(t, objs, "Deployment", host).Spec.Template.Spec.Containers {
			checkRedisArgs(t, "Deployment "+host, append(slices.Clone(rc.Command), rc.Args...))
			for _, e := range rc.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					if _, ok := secret[e.ValueFrom.SecretKeyRef.Key]; e.ValueFrom.SecretKeyRef.Name != k8sSecret || !ok {
						t.Errorf("Deployment %s: env %s reads %s/%s, which deploy/README.md's Secret lacks", host, e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
					}
				}
			}
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

// composeEnvFile is env.example, the env file compose.yaml's secrets are
// read from (the user's copy, .env, is never committed): every variable
// compose.yaml interpolates is in it, with no value (a value there would be
// a shipped secret); each gets a stand-in value here.
func composeEnvFile(t *testing.T) map[string]string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(composeDir, "env.example"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("env.example:%d: %q is not NAME=VALUE", i+1, line)
			continue
		}
		if value != "" {
			t.Errorf("env.example:%d: %s has a value: the example holds no secret", i+1, name)
		}
		env[name] = standInSecret(t, name)
	}
	compose, err := os.ReadFile(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(compose), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // compose interpolates no comment
		}
		for _, m := range composeVar.FindAllStringSubmatch(line, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("compose.yaml interpolates ${%s}, which env.example does not list", m[1])
			}
		}
	}
	return env
}

// composeVar is compose's interpolation of ${VAR} or ${VAR:-default}.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}`)

// TestComposeFile: three replicas behind nginx, each running a
// configuration that loads with exactly the environment the file gives it
// and dials services of the file; the commands are serve's; nginx's
// upstreams are the replicas' API ports; the stop grace covers the drain.
func TestComposeFile(t *testing.T) {
	services := readCompose(t)
	envFile := composeEnvFile(t)
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
			env[k] = composeVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := composeVar.FindStringSubmatch(ref)
				if v, ok := envFile[m[1]]; ok {
					return v
				}
				return m[2]
			})
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

// TestDeployShipsNoDemoCredentials: nothing under deploy/ holds the demo's
// credentials (the bcrypt hashes of config.yaml's users and admin, the demo
// passwords README.md lists, the stand-in CRM's default logins) or a
// placeholder password that would work if left in place: a deployment's
// secrets are generated by its operator (deploy/README.md).
func TestDeployShipsNoDemoCredentials(t *testing.T) {
	demo, err := config.Load("../../config.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"harbour-demo", "summit-demo", "admin-demo", "harbour-crm", "summit-crm", "change-me", demo.Admin.PasswordBcrypt}
	for _, u := range demo.Users {
		forbidden = append(forbidden, u.PasswordBcrypt)
	}
	files := 0
	err = filepath.WalkDir("../../deploy", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, s := range forbidden {
			if s != "" && strings.Contains(string(src), s) {
				t.Errorf("%s holds %q, a demo credential", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Errorf("only %d files under deploy/", files)
	}
}
