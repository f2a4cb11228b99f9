// Command gen regenerates the OpenAPI files in openapi/ with a swag
// binary: `go run ./openapi/gen -swag path/to/swag` from the module root
// (`make openapi` installs the pinned swag and runs this).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ferry-mq/ferry/openapi/internal/specgen"
)

func main() {
	swag := flag.String("swag", "swag", "swag "+specgen.SwagVersion+" binary")
	out := flag.String("out", "openapi", "output folder, relative to the module root")
	flag.Parse()
	if err := specgen.Generate(context.Background(), *swag, ".", *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}
