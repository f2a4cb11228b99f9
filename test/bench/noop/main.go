// Command noop is the baseline of the HTTP benchmarks: a chi router with the
// same POST /kafka/{topic} route as ferry that reads the body and answers a
// fixed offsets document, so the ratio ferry/noop is the cost of ferry's own
// work (decode, partition, encode, append) on this machine in this run; and
// GET /schemas/ids/{id} answering a fixed schema, the baseline of the
// registry's lookup benchmark (test/cluster).
package main

import (
	"flag"
	"io"
	"log"
	"net/http"

	"github.com/go-chi/chi/v5"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "listen address")
	flag.Parse()
	r := chi.NewRouter()
	answer := []byte(`{"offsets":[{"partition":0,"offset":0}]}` + "\n")
	r.Post("/kafka/{topic}", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	schema := []byte(`{"schema":"{\"type\":\"record\",\"name\":\"R1\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"}`)
	r.Get("/schemas/ids/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.Write(schema)
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	log.Fatal(http.ListenAndServe(*addr, r))
}
