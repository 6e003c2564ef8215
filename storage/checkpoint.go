package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/vfs"
)

const (
	checkpointName     = "gregor.checkpoint"
	checkpointTempName = checkpointName + vfs.TempSuffix
	cleanShutdownName  = ".gregor_cleanshutdown"
	checkpointVersion  = "0"
)

// checkpoint is the per-partition file that keeps the log start offset and
// the recovery point across restarts (Kafka keeps both per log directory,
// in log-start-offset-checkpoint and recovery-point-offset-checkpoint). It
// is text, Kafka's checkpoint style:
//
//	0
//	log-start-offset 42
//	recovery-point 1000
type checkpoint struct {
	logStart      int64
	recoveryPoint int64
}

// readCheckpoint returns found=false when there is no file. A file that does
// not parse is corruption: it is only ever replaced whole by rename.
func readCheckpoint(fsys vfs.FS, dir string) (cp checkpoint, found bool, err error) {
	path := filepath.Join(dir, checkpointName)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, fmt.Errorf("storage: open checkpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return cp, false, fmt.Errorf("storage: stat checkpoint: %w", err)
	}
	if fi.Size() > 4096 {
		return cp, false, &CorruptError{Path: path, Reason: "checkpoint larger than 4096 bytes"}
	}
	buf := make([]byte, fi.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return cp, false, fmt.Errorf("storage: read checkpoint: %w", err)
	}
	bad := func(why string) (checkpoint, bool, error) {
		return checkpoint{}, false, &CorruptError{Path: path, Reason: "checkpoint: " + why}
	}
	sc := bufio.NewScanner(bytes.NewReader(buf))
	if !sc.Scan() || sc.Text() != checkpointVersion {
		return bad("unknown version")
	}
	var haveStart, haveRP bool
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return bad(fmt.Sprintf("line %q", sc.Text()))
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return bad(fmt.Sprintf("line %q", sc.Text()))
		}
		switch key {
		case "log-start-offset":
			cp.logStart, haveStart = n, true
		case "recovery-point":
			cp.recoveryPoint, haveRP = n, true
		}
	}
	if !haveStart || !haveRP {
		return bad("missing entries")
	}
	return cp, true, nil
}

// writeCheckpoint replaces the checkpoint durably (vfs.WriteFileAtomic:
// checkpointTempName, fsync, rename, fsync of the directory).
func writeCheckpoint(fsys vfs.FS, dir string, cp checkpoint) error {
	text := fmt.Sprintf("%s\nlog-start-offset %d\nrecovery-point %d\n", checkpointVersion, cp.logStart, cp.recoveryPoint)
	if err := vfs.WriteFileAtomic(fsys, filepath.Join(dir, checkpointName), []byte(text), 0o644); err != nil {
		return fmt.Errorf("storage: write checkpoint: %w", err)
	}
	return nil
}

// writeCleanShutdown leaves the marker that lets the next Open skip the
// recovery scan. Everything it vouches for must be durable before it.
func writeCleanShutdown(fsys vfs.FS, dir string) error {
	f, err := fsys.OpenFile(filepath.Join(dir, cleanShutdownName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("storage: write clean-shutdown marker: %w", err)
	}
	return nil
}
