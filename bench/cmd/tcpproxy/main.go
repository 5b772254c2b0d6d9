// Command tcpproxy forwards TCP connections to a target and stages its
// outages for bench/restart.sh (a database server shared with others cannot
// be restarted): SIGUSR1 stops it (every connection dropped, new ones
// refused, as a crashed server), SIGUSR2 starts it again on the same
// address, SIGTERM or SIGINT ends it. It prints "listening on ADDR" once
// ready.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"listingproxy/internal/tcpproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	target := flag.String("target", "127.0.0.1:5432", "address to forward to")
	flag.Parse()
	p, err := tcpproxy.Listen(*listen, *target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpproxy:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, os.Interrupt)
	fmt.Printf("listening on %s\n", p.Addr())
	for s := range sig {
		switch s {
		case syscall.SIGUSR1:
			p.Stop()
			fmt.Println("stopped")
		case syscall.SIGUSR2:
			if err := p.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "tcpproxy: start:", err)
				os.Exit(1)
			}
			fmt.Println("started")
		default:
			p.Close()
			return
		}
	}
}
