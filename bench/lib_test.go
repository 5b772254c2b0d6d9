// Package bench holds the benchmark scripts (*.sh), their notes
// (NOTES.md) and, in its subdirectories, the programs they run. Its tests
// check what the scripts share: that each one parses, and that the helpers
// of lib.sh are defined there alone and behave as its comments say.
package bench

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"listingproxy/config"
)

// needTools skips t when a tool the scripts need is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: the bench scripts need it", tool)
		}
	}
}

func scripts(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.sh")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bench scripts found (%v)", err)
	}
	return files
}

// TestScriptsParse runs bash -n on every script: an edit that breaks one
// is found here, not in the middle of a 40-minute run.
func TestScriptsParse(t *testing.T) {
	needTools(t, "bash")
	for _, f := range scripts(t) {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
	}
}

// TestHelpersInLibOnly: free_port and wait_port are lib.sh's; a script
// that defines its own drifts from the others (timeouts, messages), as
// thirteen of them once did.
func TestHelpersInLibOnly(t *testing.T) {
	def := regexp.MustCompile(`(?m)^\s*(free_port|wait_port|bench_pin|bench_start|wait_for|lp_config|secs)\s*\(\)`)
	// A script that rewrites config.yaml's listeners itself instead of
	// through lp_config: its sed is unchecked, as ten of them once were.
	own := regexp.MustCompile(`(?m)^[^#\n]*\bsed\b.*\blisten: `)
	// A copy of bench_cleanup: the script's own work directory and
	// cleanup, without bench_start's watchdog.
	cleanup := regexp.MustCompile(`(?m)^\s*cleanup\(\) \{ for p in "\$\{pids\[@\]\}"; do kill`)
	for _, f := range scripts(t) {
		if f == "lib.sh" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := def.FindSubmatch(b); m != nil {
			t.Errorf("%s defines %s, which bench/lib.sh provides: source lib.sh instead", f, m[1])
		}
		if cleanup.Match(b) {
			t.Errorf("%s has its own copy of bench_cleanup: call bench_start (with a BENCH_TIMEOUT)", f)
		}
		if m := own.Find(b); m != nil {
			t.Errorf("%s rewrites a listen line with its own sed (%q): use lp_config", f, m)
		}
	}
}

// lib runs script in bash with lib.sh sourced and env added, from the
// repository's root as the scripts run, and returns its exit code and
// standard error.
func lib(t *testing.T, env []string, script string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail; . bench/lib.sh; "+script)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return 0, stderr.String()
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("bash: %v", err)
	return -1, ""
}

func TestFreePort(t *testing.T) {
	needTools(t, "bash", "python3")
	cmd := exec.Command("bash", "-c", ". bench/lib.sh; free_port")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("free_port: %v", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || port <= 0 || port > 65535 {
		t.Fatalf("free_port printed %q, not a port", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("the port free_port printed cannot be listened on: %v", err)
	}
	_ = ln.Close()
}

func TestWaitPort(t *testing.T) {
	needTools(t, "bash", "curl", "python3")

	t.Run("answers", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler()) // any HTTP answer will do
		defer srv.Close()
		port := srv.Listener.Addr().(*net.TCPAddr).Port
		if code, stderr := lib(t, nil, "wait_port "+strconv.Itoa(port)+"; echo after >&2"); code != 0 || !strings.Contains(stderr, "after") {
			t.Fatalf("wait_port on a server that answers: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("process gone", func(t *testing.T) {
		// Nothing listens on the port and the process named has exited:
		// wait_port ends the script at once, naming the server, its PID
		// and the tail of its log.
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "lp1.log"), []byte("listingproxy: config.yaml:3: unknown key\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stderr := lib(t, []string{"work=" + work},
			`port=$(free_port); true & p=$!; wait "$p"; wait_port "$port" lp1 "$p"; echo "not reached" >&2`)
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
		}
		for _, want := range []string{"bench: lp1 exited (PID ", "without answering on port ", "config.yaml:3: unknown key"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stderr, "not reached") {
			t.Errorf("the script went on after wait_port failed:\n%s", stderr)
		}
	})

	t.Run("never answers", func(t *testing.T) {
		// No process to watch: wait_port gives up after WAIT_SECONDS (1 here,
		// ten tries) with the message and exit status the scripts rely on.
		code, stderr := lib(t, []string{"WAIT_SECONDS=1"}, `port=$(free_port); wait_port "$port"; echo "not reached" >&2`)
		if code != 1 || !strings.Contains(stderr, "bench: the server never answered on port ") || strings.Contains(stderr, "not reached") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})
}

// TestLPConfig runs lp_config on the repository's config.yaml, as the
// scripts do, and loads the result with listingproxy's own loader: every
// rewrite took, and the file is still a valid configuration. A rewrite
// that matches no line (config.yaml changed under the scripts) ends the
// script, naming it.
func TestLPConfig(t *testing.T) {
	needTools(t, "bash", "sed")
	work := t.TempDir()
	out, db := filepath.Join(work, "lp.yaml"), filepath.Join(work, "demo.db")

	t.Run("rewrites", func(t *testing.T) {
		code, stderr := lib(t, []string{"LOG_LEVEL=warn"}, `lp_config config.yaml "`+out+`" 4321 5432 "`+db+`" `+
			`'s|^\(  ttl:\).*|\1 2h|' 's|^server:|server:\n  trusted_proxies: [127.0.0.1]|'`)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		cfg, err := config.Load(out, func(string) string { return "" })
		if err != nil {
			t.Fatalf("lp_config's output does not load: %v", err)
		}
		demo := cfg.Backends["demo"].SQL
		if demo == nil {
			t.Fatalf("lp_config's output has no SQL backend demo: %+v", cfg.Backends)
		}
		got := []string{cfg.Listen, cfg.AdminListen, demo.DSN, cfg.Log.Level,
			time.Duration(cfg.Cache.TTL).String(), strings.Join(cfg.Server.TrustedProxies, ",")}
		want := []string{"127.0.0.1:4321", "127.0.0.1:5432", "file:" + db, "warn", "2h0m0s", "127.0.0.1"}
		if !slices.Equal(got, want) {
			t.Errorf("listen, admin_listen, demo dsn, log level, ttl, trusted_proxies = %q, want %q", got, want)
		}
		if code, stderr := lib(t, nil, `lp_config config.yaml "`+out+`" 4321 off "`+db+`"`); code != 0 {
			t.Fatalf("admin off: exit %d:\n%s", code, stderr)
		}
		if cfg, err := config.Load(out, func(string) string { return "" }); err != nil || cfg.AdminListen != "off" || cfg.Log.Level != "error" {
			t.Errorf("admin off, default level: %+v, %v", cfg, err)
		}
	})

	for _, tc := range []struct{ name, edit, want string }{
		{"matches nothing", `'s|^\(  no_such_key:\).*|\1 1|'`, "matches no line of config.yaml"},
		{"not a substitution", `'/^cache:/d'`, "is not a sed s command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := lib(t, nil, `lp_config config.yaml "`+out+`" 4321 off "`+db+`" `+tc.edit+`; echo "not reached" >&2`)
			if code != 1 || !strings.Contains(stderr, "bench: lp_config: ") || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "not reached") {
				t.Fatalf("exit %d, want 1 with %q; stderr:\n%s", code, tc.want, stderr)
			}
		})
	}
}

func TestSecs(t *testing.T) {
	needTools(t, "bash")
	for in, want := range map[string]string{"90s": "90", "7": "7", "10m": "600", "2h": "7200", "0s": "0"} {
		if code, out := lib(t, nil, `secs `+in+` >&2`); code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("secs %s: exit %d, printed %q; want %q", in, code, out, want)
		}
	}
	for _, in := range []string{"1m30s", "0.5s", "10ms", "", "s", "-3s"} {
		if code, out := lib(t, nil, `secs '`+in+`' >&2`); code == 0 || out != "" {
			t.Errorf("secs %q: exit %d, printed %q; want a failure and nothing printed", in, code, out)
		}
	}
}
