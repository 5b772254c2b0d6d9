// Command bareproxy is bench/nginx.sh's net/http ceiling: the least a
// caching proxy written on net/http can do per hit (package bench/bare),
// measured next to listingproxy, nginx and Varnish on the same bytes.
//
// The http.Server has listingproxy's default limits (config.yaml: header
// and write timeouts, idle timeout, header size) and listingproxy's
// one-write connections (internal/onewrite), so that the difference from
// listingproxy is its handler's work and the difference from nginx is
// net/http's.
//
//	bareproxy -listen 127.0.0.1:8081 -origin http://127.0.0.1:8080 -auth 'Basic aGFyYm91cjpoYXJib3VyLWRlbW8='
//
// -spin adds a busy loop of that length to every request (bench/bare-spin.sh).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"listingproxy/bench/bare"
	"listingproxy/internal/onewrite"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	origin := flag.String("origin", "", "origin base URL (scheme, host, port)")
	auth := flag.String("auth", "", "the Authorization value every request must carry")
	spin := flag.Duration("spin", 0, "busy CPU time added to every request (0: none)")
	flag.Parse()
	if *origin == "" || *auth == "" {
		fail(fmt.Errorf("-origin and -auth are required"))
	}
	if *spin < 0 {
		fail(fmt.Errorf("-spin %v: must not be negative", *spin))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err)
	}
	p := bare.New(*origin, *auth)
	p.Spin = *spin
	fail(bare.Server(p).Serve(onewrite.Listener(ln)))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bareproxy:", err)
	os.Exit(1)
}
