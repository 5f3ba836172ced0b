// Command openapi-gen writes the OpenAPI description of the JSON mapping (openapi/compute.json)
// from the proto descriptors and the server's routes; make generate runs it.
//
//	go run ./cmd/openapi-gen [-o openapi/compute.json]
package main

import (
	"flag"
	"fmt"
	"os"

	"better-compute.dev/compute/openapi"
	"better-compute.dev/compute/server"
)

func main() {
	out := flag.String("o", "openapi/compute.json", "file to write")
	flag.Parse()
	doc, err := openapi.Generate(server.JSONMapping())
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi-gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "openapi-gen:", err)
		os.Exit(1)
	}
}
