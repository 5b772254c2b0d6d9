// Command listingproxy serves the property and agent listing API in front of
// a legacy backend (SQL database or CRM endpoint), with caching, request
// coalescing and a circuit breaker.
//
//	listingproxy [serve] [-config FILE] [-listen ADDR] [-admin-listen ADDR]
//	listingproxy check-config [-config FILE]
//	listingproxy version
//	listingproxy seed -config FILE -backend NAME [-properties N] [-agents N]
//	listingproxy diff -old URL -new URL [flags] PATHS-FILE
//	listingproxy diff -new URL -fixtures DIR [flags]
//	listingproxy hash-password [-cost N]
//	listingproxy healthcheck [-config FILE] [-admin-listen ADDR]
//
// run owns signals, configuration, wiring, serving and shutdown; main only
// calls it.
package main

import (
	"context"
	"io"
	"os"
	_ "time/tzdata" // country zones must resolve in a static image without zoneinfo
)

func main() {
	os.Exit(exitStatus(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}

// run dispatches to a subcommand; without one it serves.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		switch args[1] {
		case "help", "-h", "-help", "--help":
			return usage(stdout)
		case "version", "-version", "--version":
			return versionCommand(args[2:], stdout, stderr)
		case "check-config":
			return checkConfig(args[2:], getenv, stdout, stderr)
		case "healthcheck":
			return healthcheck(ctx, args[2:], getenv, stdout, stderr)
		case "hash-password":
			return hashPassword(args[2:], stdin, stdout, stderr)
		case "seed":
			return seedCommand(ctx, args[2:], getenv, stdout, stderr)
		case "diff":
			return diffCommand(ctx, args[2:], getenv, stdin, stdout, stderr)
		case "warm":
			return warmCommand(args[2:], getenv, stdin, stdout, stderr)
		case "serve":
			args = append(args[:1:1], args[2:]...)
		}
	}
	return serve(ctx, args, getenv, stdout, stderr)
}
