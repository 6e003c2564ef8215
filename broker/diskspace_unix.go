//go:build unix

package broker

import "syscall"

// diskSpace returns the total and available bytes of the file system
// holding dir.
func diskSpace(dir string) (total, usable int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bsize := int64(st.Bsize) // int32 on some platforms
	return int64(st.Blocks) * bsize, int64(st.Bavail) * bsize, true
}
