//go:build !linux

package broker

import (
	"errors"
	"net"
	"os"
)

// sendFile is sendfile(2) where Gregor implements it (Linux); elsewhere
// records are copied through the connection's write buffer.
func sendFile(*net.TCPConn, *os.File, int64, int64) error { return errors.ErrUnsupported }
