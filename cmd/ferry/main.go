// Command ferry is the single ferry binary: `ferry serve` runs a node; other
// subcommands are clients of a running node.
package main

import (
	"fmt"
	"os"
)

const usage = `ferry — Kafka-compatible messaging with an HTTP gateway

Usage:
  ferry serve [flags]     run a node (ferry serve -h for flags)
  ferry version           print the version

`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(os.Args[2:])
	case "version", "--version":
		fmt.Println("ferry", version)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "ferry: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		os.Exit(1)
	}
}
