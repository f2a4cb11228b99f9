package main

import (
	"errors"
	"testing"
)

// Each transactions subcommand refuses incomplete flags as a usage error
// before it dials anything.
func TestTransactionsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"describe"},
		{"describe-producers", "--topic", "t"},
		{"describe-producers", "--partition", "0"},
		{"abort", "--topic", "t", "--partition", "0"},
		{"abort", "--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "1"},
		{"abort", "--partition", "0", "--start-offset", "3"},
		{"list", "extra"},
		{"unknown"},
	} {
		if err := runTransactions(args); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
