// Package vfs is the file-system seam: every disk access of the partition
// log (storage), the controller's raft WAL and snapshots
// (coordinator/controller/raftnode) and the broker's own metadata files
// goes through an FS, so that tests can run the same code in memory, fail
// any operation, and see what a power loss would leave.
//
// It owns:
//
//   - FS and File, the interfaces; OSFS, the operating system's files.
//   - MemFS, an in-memory FS (the broker's mode without a data directory,
//     and tests). It remembers what was fsynced, and CrashClone returns
//     what a power loss would leave.
//   - FaultFS, a wrapper that fails operations as an Injector decides
//     (FailAfter, TornWriteAfter, NoSpaceAfter).
//   - WriteFileAtomic, the one way a small file is replaced durably
//     (temporary file, fsync, rename, fsync of the directory).
//
// vfs imports nothing of the project.
package vfs
