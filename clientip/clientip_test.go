package clientip_test

import (
	"net/http"
	"net/netip"
	"testing"

	"listingproxy/clientip"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	trusted, err := clientip.ParsePrefixes([]string{"10.0.0.0/8", "192.0.2.7", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		remote  string
		headers map[string][]string
		want    string // "" means the zero Addr
	}{
		{"no trust: peer", nil, "203.0.113.5:4000", map[string][]string{"X-Forwarded-For": {"1.1.1.1"}}, "203.0.113.5"},
		{"untrusted peer: headers ignored", trusted, "203.0.113.5:4000", map[string][]string{"X-Forwarded-For": {"1.1.1.1"}}, "203.0.113.5"},
		{"trusted peer, no headers", trusted, "10.1.2.3:4000", nil, "10.1.2.3"},
		{"trusted peer: xff", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9"}}, "198.51.100.9"},
		{"right-most untrusted wins over forged left", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"6.6.6.6, 198.51.100.9, 10.9.9.9"}}, "198.51.100.9"},
		{"several xff headers read as one list", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"6.6.6.6, 198.51.100.9", "192.0.2.7"}}, "198.51.100.9"},
		{"all hops trusted: left-most", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"10.5.5.5, 10.6.6.6"}}, "10.5.5.5"},
		{"garbage hop stops at the last trusted", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9, nonsense"}}, "10.1.2.3"},
		{"xff with port", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9:555"}}, "198.51.100.9"},
		{"forwarded for", trusted, "10.1.2.3:4000", map[string][]string{"Forwarded": {`for=6.6.6.6, for=198.51.100.9;proto=https`}}, "198.51.100.9"},
		{"forwarded quoted ipv6", trusted, "[::1]:4000", map[string][]string{"Forwarded": {`For="[2001:db8::7]:80"`}}, "2001:db8::7"},
		{"forwarded unknown", trusted, "10.1.2.3:4000", map[string][]string{"Forwarded": {`for=unknown`}}, "10.1.2.3"},
		{"xff preferred over forwarded", trusted, "10.1.2.3:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9"}, "Forwarded": {"for=6.6.6.6"}}, "198.51.100.9"},
		{"mapped ipv4 peer", trusted, "[::ffff:10.1.2.3]:4000", map[string][]string{"X-Forwarded-For": {"198.51.100.9"}}, "198.51.100.9"},
		{"bad remote addr", trusted, "pipe", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
			req.RemoteAddr = tt.remote
			for k, vs := range tt.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			got := clientip.Resolver{Trusted: tt.trusted}.Addr(req)
			var want netip.Addr
			if tt.want != "" {
				want = netip.MustParseAddr(tt.want)
			}
			if got != want {
				t.Errorf("Addr = %v, want %v", got, want)
			}
		})
	}
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", false},
		{"10.1.2.3/8", "10.0.0.0/8", false},
		{" 192.0.2.7 ", "192.0.2.7/32", false},
		{"::1", "::1/128", false},
		{"2001:db8::/32", "2001:db8::/32", false},
		{"example.com", "", true},
		{"10.0.0.0/33", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := clientip.ParsePrefix(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.String() != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
