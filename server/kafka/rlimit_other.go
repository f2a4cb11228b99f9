//go:build !unix

package kafka

func defaultMaxConnections() int { return fallbackMaxConnections }
