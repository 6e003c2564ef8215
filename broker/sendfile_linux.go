package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// maxSendfileChunk bounds one sendfile(2) call; Linux sends at most
// 0x7ffff000 bytes per call anyway.
const maxSendfileChunk = 1 << 30

// sendFile sends n bytes of f starting at pos to tc with sendfile(2),
// waiting in the network poller whenever the socket buffer is full.
//
// It passes the offset explicitly, so f's own file offset is neither used
// nor moved and any number of connections may send from one file at once.
// (net.TCPConn.ReadFrom would use sendfile too, but from the file's shared
// offset, which concurrent fetches of one segment would race on.) A file
// that ends before pos+n is errShortRange; the bytes before it are already
// on the wire, so the caller must close the connection.
func sendFile(tc *net.TCPConn, f *os.File, pos, n int64) error {
	src, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	dst, err := tc.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	var sent int64
	var sendErr, writeErr error
	ctlErr := src.Control(func(in uintptr) {
		// Write calls the function again, once the socket is writable, each
		// time it returns false.
		writeErr = dst.Write(func(out uintptr) bool {
			for sent < n {
				off := pos + sent
				m, err := syscall.Sendfile(int(out), int(in), &off, int(min(n-sent, maxSendfileChunk)))
				if m > 0 {
					sent += int64(m)
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					sendErr = os.NewSyscallError("sendfile", err)
					return true
				case m == 0:
					sendErr = errShortRange
					return true
				}
			}
			return true
		})
	})
	return errors.Join(ctlErr, writeErr, sendErr)
}
