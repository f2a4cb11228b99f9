//go:build pprof

package main

import (
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"
)

// A binary built with -tags pprof serves net/http/pprof on
// FERRY_PPROF_ADDR (loopback, e.g. 127.0.0.1:6060) when that is set, so a
// benchmark run (scripts/bench-http.sh) can be profiled as it is served:
//
//	go build -tags pprof -o /tmp/ferry ./cmd/ferry
//	FERRY_PPROF_ADDR=127.0.0.1:6060 /tmp/ferry serve …
//	go tool pprof 'http://127.0.0.1:6060/debug/pprof/profile?seconds=10'
//
// Release builds leave it out: pprof on the gateway's port would let any
// client read the process's memory profile.
func init() {
	addr := os.Getenv("FERRY_PPROF_ADDR")
	if addr == "" {
		return
	}
	go func() { log.Println(http.ListenAndServe(addr, nil)) }()
}
