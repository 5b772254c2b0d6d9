package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const unitPath = "../../deploy/systemd/listingproxy.service"

// readUnit returns the unit's directives, each with every value it is
// given in file order.
func readUnit(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	d := map[string][]string{}
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q: not key=value", line)
		}
		d[k] = append(d[k], v)
	}
	return d
}

// TestSystemdUnit: the unit is hardened, and its commands are ones the
// binary accepts (check-config passes on the shipped configuration).
func TestSystemdUnit(t *testing.T) {
	d := readUnit(t)
	for key, want := range map[string]string{
		"DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "MemoryDenyWriteExecute": "yes",
		"SystemCallFilter": "@system-service", "StateDirectory": "listingproxy", "KillSignal": "SIGTERM",
	} {
		if !slices.Contains(d[key], want) {
			t.Errorf("%s=%q, want %q among them", key, d[key], want)
		}
	}

	config := func(args []string) []string {
		out := slices.Clone(args)
		for i, a := range out {
			if a == "/etc/listingproxy/config.yaml" {
				out[i] = "../../config.yaml"
			}
		}
		return out
	}
	binary := func(key, line string) []string {
		args := strings.Fields(line)
		if args[0] != "/usr/local/bin/listingproxy" {
			t.Fatalf("%s=%s: want /usr/local/bin/listingproxy", key, line)
		}
		return config(args[1:])
	}
	for _, key := range []string{"ExecStartPre", "ExecReload"} {
		line := d[key][0]
		if status, out, errOut := runCmd(t, noEnv, binary(key, line)...); status != 0 || !strings.Contains(out, ": ok") {
			t.Errorf("%s=%s: exit %d, stdout %q, stderr %q; want a passing check", key, line, status, out, errOut)
		}
	}
	if got := d["ExecReload"]; len(got) != 2 || got[1] != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%q: want check-config, then SIGHUP", got)
	}
	serve := binary("ExecStart", d["ExecStart"][0])
	err := run(context.Background(), append(append([]string{"listingproxy"}, serve...), "-h"), noEnv, nil, io.Discard, io.Discard)
	if serve[0] != "serve" || !errors.Is(err, flag.ErrHelp) {
		t.Errorf("ExecStart %q: want serve with flags serve accepts (got %v)", serve, err)
	}

	// systemd's own checks, where systemd is installed (Debian's CI
	// image has it): the unit parses, and its exposure stays low.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit's syntax and exposure are not checked")
		return
	}
	src, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	// verify needs the commands to exist: point them at an executable.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "listingproxy.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(src), "/usr/local/bin/listingproxy", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"verify", unit},
		{"security", "--offline=true", "--threshold=20", unit}, // exposure at most 2.0 of 10
	} {
		out, err := exec.Command(analyze, args...).CombinedOutput()
		if err != nil || strings.Contains(string(out), unit+":") {
			t.Errorf("systemd-analyze %s: %v\n%s", args[0], err, out)
		}
	}
}
