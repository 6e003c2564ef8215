//go:build !unix

package broker

import "os"

// lockDataDir takes no lock on platforms without flock(2): two brokers on
// one data dir are not detected there.
func lockDataDir(string) (*os.File, error) { return nil, nil }

func unlockDataDir(*os.File) {}
