package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/internal/testkit"
	"listingproxy/telemetry"
)

func noEnv(string) string { return "" }

// runCmd runs the command line args as main would and returns its exit
// status, stdout and stderr.
func runCmd(t *testing.T, getenv func(string) string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(context.Background(), append([]string{"listingproxy"}, args...), getenv, strings.NewReader(""), &out, &errOut)
	status = exitStatus(err, &errOut)
	return status, out.String(), errOut.String()
}

// golden compares got with testdata/golden/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"help", "-h", "-help", "--help"} {
		t.Run(arg, func(t *testing.T) {
			status, out, errOut := runCmd(t, noEnv, arg)
			if status != 0 || errOut != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", status, errOut)
			}
			golden(t, "help.txt", out)
		})
	}
	// Every command the help lists is dispatched: its -h is its own flag
	// usage (exit 0), not the serve flags'.
	for _, c := range commands {
		t.Run(c.name+" -h", func(t *testing.T) {
			status, _, errOut := runCmd(t, noEnv, c.name, "-h")
			if status != 0 {
				t.Errorf("exit %d, want 0 (stderr %q)", status, errOut)
			}
			if c.name != "serve" && strings.Contains(errOut, "-admin-listen string\n    \tadmin listen address, overrides") {
				t.Errorf("%s -h printed serve's flags:\n%s", c.name, errOut)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		wantStderr string
	}{
		{"success", nil, 0, ""},
		{"help requested", fmt.Errorf("seed: %w", flag.ErrHelp), 0, ""},
		{"failure", errors.New("listen :1: permission denied"), 1, "listingproxy: listen :1: permission denied\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if got := exitStatus(tt.err, &stderr); got != tt.status {
				t.Errorf("status %d, want %d", got, tt.status)
			}
			if stderr.String() != tt.wantStderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestVersionLine(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		b    telemetry.Build
		want string
	}{
		{"release", telemetry.Build{Version: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.8"},
			"listingproxy v1.4.0 commit 0123456789abcdef0123456789abcdef01234567 go1.26.8 " + platform},
		{"work tree with changes", telemetry.Build{Version: "(devel)", Commit: "abc123-dirty", GoVersion: "go1.26.8"},
			"listingproxy (devel) commit abc123-dirty go1.26.8 " + platform},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionLine(tt.b); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	want := versionLine(telemetry.ReadBuild()) + "\n"
	for _, arg := range []string{"version", "-version", "--version"} {
		t.Run(arg, func(t *testing.T) {
			status, out, _ := runCmd(t, noEnv, arg)
			if status != 0 || out != want {
				t.Errorf("exit %d, stdout %q; want 0 and %q", status, out, want)
			}
			if !strings.Contains(out, runtime.Version()) {
				t.Errorf("%q lacks the Go version %s", out, runtime.Version())
			}
		})
	}
}

// TestCheckConfig: check-config validates without binding the configured
// ports or opening the backends, and lists every problem, located.
func TestCheckConfig(t *testing.T) {
	// A port held by the test: check-config must not try to bind it.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// A PostgreSQL backend nobody listens on: check-config must not dial it.
	deadAddr := testkit.ClosedAddr(t)

	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", fmt.Sprintf(`listen: %q
admin_listen: %q
backends:
  main: {kind: postgres, dsn: "postgres://u@%s/db?connect_timeout=1"}
tenants:
  a: {backend: main}
cache:
  ttl: "${CACHE_TTL}"
`, held.Addr(), testkit.ClosedAddr(t), deadAddr))
	bad := write("bad.yaml", `listen: nope
backends:
  main: {kind: postgres, dsn: "${PG_DSN}"}
tenants:
  a: {backend: main, upstream_tenat: x}
cache:
  ttl: soon
  max_bytes: "${CACHE_SIZE}"
breaker: {failures: many}
`)
	env := func(k string) string { return map[string]string{"CACHE_TTL": "30s"}[k] }

	tests := []struct {
		name       string
		args       []string
		status     int
		stdout     string
		stderrHave []string
	}{
		{"valid", []string{"check-config", "-config", good}, 0, good + ": ok (1 backend, 1 tenant, 0 users)\n", nil},
		{"file as argument", []string{"check-config", good}, 0, good + ": ok (1 backend, 1 tenant, 0 users)\n", nil},
		{"shipped demo", []string{"check-config", "-config", "../../config.yaml"}, 0, "../../config.yaml: ok (1 backend, 2 tenants, 4 users)\n", nil},
		{"every problem, located", []string{"check-config", "-config", bad}, 1, "", []string{
			"listingproxy: invalid configuration (6 problems):\n",
			"  " + bad + `:1: listen: invalid listen address "nope" (want host:port or :port)` + "\n",
			"  " + bad + ":3: backends.main.dsn: environment variable PG_DSN is not set\n",
			"  " + bad + `:5: tenants.a.upstream_tenat: unknown key "upstream_tenat" (did you mean "upstream_tenant"?)` + "\n",
			"  " + bad + `:7: cache.ttl: invalid duration "soon" (want e.g. 500ms, 10s, 5m)` + "\n",
			"  " + bad + ":8: cache.max_bytes: environment variable CACHE_SIZE is not set\n",
			"  " + bad + `:9: breaker.failures: invalid count "many" (want a whole number, 0 or more)` + "\n",
		}},
		{"missing file", []string{"check-config", "-config", filepath.Join(dir, "none.yaml")}, 1, "", []string{"none.yaml: no such file or directory"}},
		{"two files", []string{"check-config", good, bad}, 2, "", []string{`check-config: unexpected argument "` + bad + `"`, "\nusage: listingproxy check-config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out, errOut := runCmd(t, env, tt.args...)
			if status != tt.status || out != tt.stdout {
				t.Errorf("exit %d, stdout %q; want %d, %q (stderr %q)", status, out, tt.status, tt.stdout, errOut)
			}
			if tt.stderrHave != nil && !strings.Contains(errOut, strings.Join(tt.stderrHave, "")) {
				t.Errorf("stderr:\n%s\nwant it to contain:\n%s", errOut, strings.Join(tt.stderrHave, ""))
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer healthy.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	deadAddr := testkit.ClosedAddr(t)
	healthyAddr := healthy.Listener.Addr().String()
	_, healthyPort, _ := net.SplitHostPort(healthyAddr)

	dir := t.TempDir()
	cfgWith := func(admin string) string {
		path := filepath.Join(dir, strings.NewReplacer(":", "_", ".", "_").Replace(admin)+".yaml")
		src := fmt.Sprintf("admin_listen: %q\nbackends: {d: {kind: sqlite, dsn: x}}\ntenants: {a: {backend: d}}\n", admin)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	tests := []struct {
		name   string
		args   []string
		status int
		output string // stdout when healthy, else a part of stderr
	}{
		{"flag", []string{"-admin-listen", healthyAddr}, 0, "http://" + healthyAddr + "/healthz: ok\n"},
		{"from the config", []string{"-config", cfgWith(healthyAddr)}, 0, "http://" + healthyAddr + "/healthz: ok\n"},
		{"any address is asked on loopback", []string{"-config", cfgWith("0.0.0.0:" + healthyPort)}, 0, "http://" + healthyAddr + "/healthz: ok\n"},
		{"port only", []string{"-admin-listen", ":" + healthyPort}, 0, "http://" + healthyAddr + "/healthz: ok\n"},
		{"not 200", []string{"-admin-listen", sick.Listener.Addr().String()}, 1, "503 Service Unavailable: shutting down"},
		{"nobody listens", []string{"-admin-listen", deadAddr}, 1, "connection refused"},
		{"admin off", []string{"-config", cfgWith("off")}, 1, "the admin listener is off"},
		{"bad address", []string{"-admin-listen", "nope"}, 1, `admin address "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out, errOut := runCmd(t, noEnv, append([]string{"healthcheck"}, tt.args...)...)
			if status != tt.status {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", status, tt.status, out, errOut)
			}
			if status == 0 && out != tt.output || status != 0 && !strings.Contains(errOut, tt.output) {
				t.Errorf("stdout %q, stderr %q; want %q", out, errOut, tt.output)
			}
		})
	}
}

// TestHealthcheckAgainstRun asks the real service's admin listener.
func TestHealthcheckAgainstRun(t *testing.T) {
	_, admin := startRun(t, demoConfig(t))
	addr := strings.TrimPrefix(admin, "http://")
	status, out, errOut := runCmd(t, noEnv, "healthcheck", "-admin-listen", addr)
	if want := admin + "/healthz: ok\n"; status != 0 || out != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", status, out, errOut, want)
	}
}

func TestUnknownArgument(t *testing.T) {
	status, _, errOut := runCmd(t, noEnv, "sede")
	if want := `listingproxy: serve: unexpected argument "sede" (not a command: "listingproxy help" lists them)`; status != 2 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", status, errOut, want)
	}
}

// TestUsageOfEveryCommand: every subcommand prints its usage alike on -h
// ("usage: listingproxy NAME ...", then its flags), exit status 0, and a
// bad flag or an unexpected argument prints the mistake and the same
// usage, exit status 2, all on standard error.
func TestUsageOfEveryCommand(t *testing.T) {
	for _, name := range []string{"serve", "check-config", "seed", "warm", "hash-password", "healthcheck", "version", "diff"} {
		t.Run(name, func(t *testing.T) {
			status, out, errOut := runCmd(t, noEnv, name, "-h")
			if status != 0 || out != "" || !strings.HasPrefix(errOut, "usage: listingproxy "+name) {
				t.Errorf("%s -h: exit %d, stdout %q, stderr %q; want 0 and the usage on stderr", name, status, out, errOut)
			}
			if name != "version" && !strings.Contains(errOut, "\nflags:\n  -") {
				t.Errorf("%s -h lists no flags under \"flags:\":\n%s", name, errOut)
			}
			status, out, errOut = runCmd(t, noEnv, name, "-no-such-flag")
			if status != 2 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") || !strings.Contains(errOut, "usage: listingproxy "+name) {
				t.Errorf("%s -no-such-flag: exit %d, stdout %q, stderr %q; want 2, the mistake and the usage", name, status, out, errOut)
			}
		})
	}
}
