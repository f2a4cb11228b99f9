//go:build unix

package kafka

import "syscall"

// defaultMaxConnections is half the open-file soft limit: the other half
// stays for segment files, indexes and the node's own files.
func defaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return fallbackMaxConnections
	}
	return int(max(min(lim.Cur/2, 1<<20), 1))
}
