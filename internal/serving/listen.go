package serving

import (
	"context"
	"net"
)

// Listen opens a TCP listener on addr. With reusePort, the socket is
// opened with SO_REUSEPORT, so that a new process can listen on the same
// address while the old one drains (each then gets new connections, the
// kernel spreading them, until the old one closes its listener); the
// kernel lets only processes of the same user share the address.
func Listen(ctx context.Context, addr string, reusePort bool) (net.Listener, error) {
	var lc net.ListenConfig
	if reusePort {
		lc.Control = reusePortControl
	}
	return lc.Listen(ctx, "tcp", addr)
}
