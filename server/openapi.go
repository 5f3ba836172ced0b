package server

import (
	"net/http"

	"better-compute.dev/compute/openapi"
)

// serveOpenAPI answers GET /api/compute/openapi.json with the description of this build's JSON
// mapping (openapi/compute.json, embedded). It needs no token: it describes, it reveals no data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openapi.Document)
}
