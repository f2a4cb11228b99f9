//go:build !unix

package kafka

func diskSpace(string) (total, usable int64) { return -1, -1 }
