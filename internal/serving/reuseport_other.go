//go:build !unix

package serving

import (
	"errors"
	"syscall"
)

// reusePortControl refuses: SO_REUSEPORT is a Unix socket option.
func reusePortControl(_, _ string, _ syscall.RawConn) error {
	return errors.New("server.reuse_port needs SO_REUSEPORT, which this system does not have")
}
