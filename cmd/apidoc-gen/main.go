// Command apidoc-gen writes the API reference (docs/api/reference.md) from the served OpenAPI
// document (openapi/compute.json): per operation, every request field with its type, whether it
// is required and its rules, so the reference says exactly what the server validates. make
// generate runs it after openapi-gen; make check-generated fails when it is stale.
//
//	go run ./cmd/apidoc-gen [-in openapi/compute.json] [-o docs/api/reference.md]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "openapi/compute.json", "the OpenAPI document to read")
	out := flag.String("o", "docs/api/reference.md", "file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "apidoc-gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	doc, err := render(raw)
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(doc, '\n'), 0o644)
}
