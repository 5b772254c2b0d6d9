// Package clientip owns one question: which address made an HTTP request.
// The TCP peer (http.Request.RemoteAddr) is the answer unless the peer is a
// trusted proxy; then the forwarding headers (X-Forwarded-For, Forwarded
// "for=") are read from the right, skipping trusted hops, and the first
// untrusted address is the client. Reading from the right matters: a client
// writes whatever it likes on the left of those headers, but each trusted
// proxy appends the address it saw.
//
// It imports the standard library only, so that any package (proxy, the
// access log in telemetry) may use it; it must not import anything of
// listingproxy.
package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address. The zero value trusts no
// proxy: the answer is always the TCP peer.
type Resolver struct {
	// Trusted are the networks of the proxies whose forwarding headers are
	// believed (a single address is a /32 or /128 prefix).
	Trusted []netip.Prefix
}

// ParsePrefixes parses addresses and CIDR prefixes ("10.0.0.0/8",
// "192.0.2.7", "::1"); a bare address is its own single-address prefix.
func ParsePrefixes(ss []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePrefix parses one address or CIDR prefix, as ParsePrefixes does.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// Addr returns the client address of req: the TCP peer, or, when the peer
// is a trusted proxy, the right-most address of the forwarding headers that
// is not itself trusted (X-Forwarded-For first; Forwarded "for=" when there
// is no X-Forwarded-For). If every hop is trusted, the left-most one is the
// answer; if a hop cannot be parsed (a hostname, "unknown", garbage), the
// last trusted address before it is (never a value the client may have
// forged). An unparsable RemoteAddr gives the zero Addr.
func (r Resolver) Addr(req *http.Request) netip.Addr {
	peer := parseHost(req.RemoteAddr)
	if !peer.IsValid() || !r.Trusts(peer) {
		return peer
	}
	hops := req.Header.Values("X-Forwarded-For")
	forwarded := false
	if len(hops) == 0 {
		hops, forwarded = req.Header.Values("Forwarded"), true
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		fields := strings.Split(hops[i], ",")
		for j := len(fields) - 1; j >= 0; j-- {
			var a netip.Addr
			if forwarded {
				a = forwardedFor(fields[j])
			} else {
				a = parseHost(strings.TrimSpace(fields[j]))
			}
			if !a.IsValid() {
				return client
			}
			client = a
			if !r.Trusts(a) {
				return a
			}
		}
	}
	return client
}

// Trusts reports whether a is within one of r.Trusted (the connection
// limits exempt such a peer).
func (r Resolver) Trusts(a netip.Addr) bool {
	for _, p := range r.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the address of the for= parameter of one
// Forwarded element (RFC 7239: for=192.0.2.60;proto=http, for="[2001:db8::1]:80").
func forwardedFor(elem string) netip.Addr {
	for _, kv := range strings.Split(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !strings.EqualFold(k, "for") {
			continue
		}
		return parseHost(strings.Trim(strings.TrimSpace(v), `"`))
	}
	return netip.Addr{}
}

// parseHost parses "1.2.3.4", "1.2.3.4:80", "[::1]:80", "[::1]" or "::1",
// unmapping IPv4-in-IPv6 addresses; anything else is the zero Addr.
func parseHost(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	} else {
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}
