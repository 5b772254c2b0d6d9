package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"listingproxy/config"
)

// instruction is one of the Dockerfile's instructions: keyword and arguments, with
// continuation lines joined and comments dropped.
type instruction struct{ keyword, args string }

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	src, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	joined := ""
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			joined += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line = strings.TrimSpace(joined + line)
		joined = ""
		if kw, args, ok := strings.Cut(line, " "); ok {
			out = append(out, instruction{strings.ToUpper(kw), strings.TrimSpace(args)})
		}
	}
	return out
}

// execForm decodes an instruction's JSON (exec) form.
func execForm(t *testing.T, kw, args string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatalf("%s %s: not in exec form (a JSON list): %v", kw, args, err)
	}
	return argv
}

// TestDockerfile checks what this machine cannot build (no container
// engine can pull the base images here): a static, non-root image whose
// entrypoint is the binary alone, so `docker run IMAGE COMMAND` runs any
// command, with a default `serve` that the real flag parsing accepts and a
// HEALTHCHECK that asks the admin listener.
func TestDockerfile(t *testing.T) {
	var froms, entrypoint, cmd, health []string
	var user string
	for _, in := range readDockerfile(t) {
		switch in.keyword {
		case "FROM":
			froms = append(froms, strings.Fields(in.args)[0])
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = execForm(t, in.keyword, in.args)
		case "CMD":
			cmd = execForm(t, in.keyword, in.args)
		case "HEALTHCHECK":
			_, c, ok := strings.Cut(in.args, "CMD ")
			if !ok {
				t.Fatalf("HEALTHCHECK %s: no CMD", in.args)
			}
			health = execForm(t, in.keyword, c)
		}
	}
	if len(froms) < 2 || !strings.HasPrefix(froms[0], "docker.io/library/golang:1.26") {
		t.Errorf("stages %v: want a docker.io/library/golang:1.26 builder and a final stage", froms)
	}
	for _, f := range froms {
		if registry, _, _ := strings.Cut(f, "/"); !strings.Contains(registry, ".") {
			t.Errorf("FROM %s: want a fully qualified name (registry/repository:tag), which podman needs", f)
		}
	}
	if last := froms[len(froms)-1]; !strings.HasPrefix(last, "gcr.io/distroless/static") {
		t.Errorf("final stage %s: want distroless/static", last)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if !slices.Equal(entrypoint, []string{"/listingproxy"}) {
		t.Errorf("ENTRYPOINT %q: want the binary alone, so that every command runs", entrypoint)
	}
	if len(cmd) == 0 || cmd[0] != "serve" {
		t.Fatalf("CMD %q: want serve", cmd)
	}
	if len(health) < 2 || health[0] != "/listingproxy" || health[1] != "healthcheck" {
		t.Fatalf("HEALTHCHECK CMD %q: want /listingproxy healthcheck", health)
	}
	src, _ := os.ReadFile("../../Dockerfile")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "COPY config.yaml /etc/listingproxy/config.yaml", "WORKDIR /data",
		// The context has no .git: the revision comes in as a build
		// argument, linked into telemetry (TestLinkTimeCommit).
		"ARG COMMIT=unknown", "-X listingproxy/telemetry.commit=${COMMIT}"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}

	// The default command's flags are serve's: with -h appended, serve
	// parses them all and stops before binding anything.
	err := run(context.Background(), append(append([]string{"listingproxy"}, withConfig(cmd, "../../config.yaml")...), "-h"), noEnv, nil, io.Discard, io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("CMD %q: serve's flags rejected it: %v", cmd, err)
	}

	// Admin on loopback inside the image unless configured: neither the
	// shipped configuration nor the default command opens it wider.
	cfg, err := config.Load("../../config.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.AdminListen, "127.0.0.1:") || slices.Contains(cmd, "-admin-listen") {
		t.Errorf("admin listener %s (CMD %q): want loopback inside the image", cfg.AdminListen, cmd)
	}

	// The HEALTHCHECK command, run against the service serving the
	// image's configuration (on ephemeral ports), succeeds.
	t.Run("healthcheck", func(t *testing.T) {
		path := demoConfig(t)
		_, admin := startRun(t, path)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		running := filepath.Join(t.TempDir(), "config.yaml")
		s := strings.Replace(string(src), `admin_listen: "127.0.0.1:0"`, `admin_listen: "`+strings.TrimPrefix(admin, "http://")+`"`, 1)
		if err := os.WriteFile(running, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		status, out, errOut := runCmd(t, noEnv, withConfig(health, running)[1:]...)
		if status != 0 {
			t.Errorf("HEALTHCHECK %q: exit %d, stdout %q, stderr %q", health, status, out, errOut)
		}
	})
}

// withConfig is args with the image's configuration path replaced by path.
func withConfig(args []string, path string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if a == "/etc/listingproxy/config.yaml" {
			out[i] = path
		}
	}
	return out
}
