package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"listingproxy/docdiff/endpoints"
)

const diffUsage = `usage: listingproxy diff -old URL -new URL [flags] [-paths FILE | -log FILE | PATHS-FILE]
       listingproxy diff [-old URL] -new URL -fixtures DIR [flags] [-paths FILE | -log FILE | PATHS-FILE]

Requests every path from the old and the new endpoint and compares the
answers: status code, content type, and the documents structurally (XML:
elements, their order, attributes and text; JSON: keys, their order, and
values). Prints the first differences of each path that differs and a
summary line, and exits 1 when any path differs or fails.

With -fixtures DIR (a corpus of recorded legacy answers, DIR/au/properties.xml
answering /au/properties.xml), the paths are the files under DIR unless
-paths or -log give them, and without -old each file is the old answer
(status 200; its content type is not compared; a path's query is ignored
to find its file, as the stand-in legacy-crm -fixtures does).

Passwords may come from the environment instead of flags:
LISTINGPROXY_DIFF_PASSWORD (both), LISTINGPROXY_DIFF_OLD_PASSWORD,
LISTINGPROXY_DIFF_NEW_PASSWORD.

Flags:
`

// diffCommand compares an old and a new endpoint path by path (package
// docdiff/endpoints); see diffUsage.
func diffCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := commandFlags("diff", "", stderr)
	fs.Usage = func() { // the synopsis takes two lines and a description
		fmt.Fprint(stderr, diffUsage)
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	oldURL := fs.String("old", "", "base URL of the old endpoint, e.g. http://crm.example/api")
	newURL := fs.String("new", "", "base URL of the new endpoint, e.g. http://127.0.0.1:8080")
	user := fs.String("user", "", "Basic auth user of both endpoints")
	password := fs.String("password", "", "Basic auth password of both endpoints (or $LISTINGPROXY_DIFF_PASSWORD)")
	oldUser := fs.String("old-user", "", "user of the old endpoint (default -user)")
	oldPassword := fs.String("old-password", "", "password of the old endpoint (default -password, or $LISTINGPROXY_DIFF_OLD_PASSWORD)")
	newUser := fs.String("new-user", "", "user of the new endpoint (default -user)")
	newPassword := fs.String("new-password", "", "password of the new endpoint (default -password, or $LISTINGPROXY_DIFF_NEW_PASSWORD)")
	pathsFile := fs.String("paths", "", "file of request paths, one per line (# comments); - is stdin")
	logFile := fs.String("log", "", "access log (common or combined format) whose GET requests are compared")
	maxDiffs := fs.Int("max-diffs", 5, "differences printed per path")
	concurrency := fs.Int("concurrency", 4, "paths compared at once")
	timeout := fs.Duration("timeout", 10*time.Second, "per request")
	fixtures := fs.String("fixtures", "", "directory of recorded legacy answers: the corpus of paths, and without -old the old answers")
	ignoreCT := fs.Bool("ignore-content-type", false, "do not compare content types (a legacy endpoint that labels its XML text/html)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(1))
	}
	if fs.NArg() == 1 {
		if *pathsFile != "" || *logFile != "" {
			return errors.New("diff: give one of -paths, -log or a paths file")
		}
		*pathsFile = fs.Arg(0)
	}
	pw := cmp.Or(*password, getenv("LISTINGPROXY_DIFF_PASSWORD"))
	err := endpoints.Run(ctx, endpoints.Options{
		Old:       endpoints.Endpoint{URL: *oldURL, User: cmp.Or(*oldUser, *user), Password: cmp.Or(*oldPassword, getenv("LISTINGPROXY_DIFF_OLD_PASSWORD"), pw)},
		New:       endpoints.Endpoint{URL: *newURL, User: cmp.Or(*newUser, *user), Password: cmp.Or(*newPassword, getenv("LISTINGPROXY_DIFF_NEW_PASSWORD"), pw)},
		PathsFile: *pathsFile, LogFile: *logFile, Fixtures: *fixtures, Stdin: stdin,
		MaxDiffs: *maxDiffs, Concurrency: *concurrency, Timeout: *timeout, IgnoreContentType: *ignoreCT,
	}, stdout)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	return nil
}
