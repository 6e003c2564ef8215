//go:build !unix

package broker

// diskSpace is unknown on platforms without statfs.
func diskSpace(string) (total, usable int64, ok bool) { return 0, 0, false }
