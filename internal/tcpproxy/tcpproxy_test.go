package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves an echo server until the test ends and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line on c and reads it back.
func roundTrip(c net.Conn, line string) (string, error) {
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	return got, err
}

// TestStopDropsAndRefusesStartAccepts: a running proxy forwards; Stop ends
// its connections (the client reads EOF or a reset, never a timeout) and
// refuses new ones; Start accepts again on the same address.
func TestStopDropsAndRefusesStartAccepts(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "one"); err != nil || got != "one\n" {
		t.Fatalf("through the running proxy: %q, %v", got, err)
	}

	p.Stop()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a connection survived Stop")
	} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Error("Stop did not close the connection (read timed out)")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		c2.Close()
		t.Error("a stopped proxy accepted a connection")
	}

	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after Start: %v", err)
	}
	defer c3.Close()
	if got, err := roundTrip(c3, "two"); err != nil || got != "two\n" {
		t.Errorf("through the restarted proxy: %q, %v", got, err)
	}
}
