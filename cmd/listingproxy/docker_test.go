package main

import (
	"os"
	"strings"
	"testing"
)

// TestDockerfile checks what this machine cannot build: a multi-stage file
// whose last stage is static, non-root, and ships the binary and config.
func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var user string
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "FROM":
			froms = append(froms, f[1])
		case "USER":
			user = f[1]
		}
	}
	if len(froms) < 2 || !strings.HasPrefix(froms[0], "golang:1.26") {
		t.Errorf("stages %v: want a golang:1.26 builder and a final stage", froms)
	}
	if last := froms[len(froms)-1]; !strings.HasPrefix(last, "gcr.io/distroless/static") && last != "scratch" {
		t.Errorf("final stage %s: want distroless/static or scratch", last)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q: want a non-root user", user)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "COPY config.yaml", "EXPOSE 8080 8081", `"-admin-listen", "0.0.0.0:8081"`, "WORKDIR /data"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
}
