// Package tcpproxy owns a TCP forwarder that can be stopped and started
// again on the same address, to stage a backend outage or restart in tests
// and bench scripts (a database server shared with others cannot be
// restarted): Stop drops every connection and refuses new ones, Start
// accepts again.
//
// It imports only the standard library, and nothing imports it but tests
// and bench/cmd.
package tcpproxy

import (
	"io"
	"net"
	"sync"
)

// Proxy forwards connections accepted on its address to a target address.
type Proxy struct {
	target string

	mu     sync.Mutex
	addr   string
	ln     net.Listener // nil while stopped
	conns  map[net.Conn]struct{}
	served sync.WaitGroup
}

// Listen starts a proxy to target on addr ("127.0.0.1:0" picks a port).
func Listen(addr, target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// Reserve returns a stopped proxy to target on a port of 127.0.0.1 that was
// free a moment ago: connections to it are refused until Start.
func Reserve(target string) (*Proxy, error) {
	p, err := Listen("127.0.0.1:0", target)
	if err != nil {
		return nil, err
	}
	p.Stop()
	return p, nil
}

// Addr is the proxy's address (host:port); it stays the same across Stop
// and Start.
func (p *Proxy) Addr() string { return p.addr }

// Stop closes the listener and every connection, as a crashed server would:
// clients see their connections reset and new ones refused. It returns once
// every forwarding goroutine has ended.
func (p *Proxy) Stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.served.Wait()
}

// Start listens again on the proxy's address. It does nothing when the
// proxy is running.
func (p *Proxy) Start() error {
	p.mu.Lock()
	running := p.ln != nil
	p.mu.Unlock()
	if running {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close stops the proxy for good.
func (p *Proxy) Close() { p.Stop() }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.served.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.served.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.forward(c)
		}
	}()
}

// forward connects c to the target and copies both ways until either side
// ends or Stop closes them.
func (p *Proxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.ln == nil { // stopped meanwhile
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.served.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.served.Done()
		defer p.drop(c)
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			return
		}
		if !p.track(t) {
			return
		}
		defer p.drop(t)
		done := make(chan struct{}, 2)
		cp := func(dst, src net.Conn) {
			// Either side ending ends both, as a server's exit would.
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
			done <- struct{}{}
		}
		go cp(t, c)
		go cp(c, t)
		<-done
		<-done
	}()
}

// track registers a connection to the target, so Stop closes it; false
// (and t closed) when the proxy stopped meanwhile.
func (p *Proxy) track(t net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		t.Close()
		return false
	}
	p.conns[t] = struct{}{}
	return true
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
