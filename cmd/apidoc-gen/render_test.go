package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReferenceIsFresh: the checked-in reference is the rendering of the checked-in OpenAPI
// document, so a rule added to a proto reaches docs/api/reference.md with make generate or
// this test fails (make check-generated fails too, but needs buf).
func TestReferenceIsFresh(t *testing.T) {
	raw, err := os.ReadFile("../../openapi/compute.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/api/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimRight(got, "\n"), want) {
		t.Fatal("docs/api/reference.md is not the rendering of openapi/compute.json: run make generate (or go run ./cmd/apidoc-gen) and commit")
	}
}

// tiny is a document with one operation whose request nests a message that contains itself, an
// optional id that may be empty, a pattern holding a pipe, a keyword the renderer has no words
// for and a rule across fields.
const tiny = `{
 "info": {"title": "T", "version": "v1"},
 "paths": {"/api/x/things/create": {"post": {
   "operationId": "things/create", "tags": ["things"], "description": "Makes a thing.",
   "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/p.CreateThingRequest"}}}},
   "responses": {
     "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/p.Thing"}}}},
     "404": {"description": "The call failed: NOT_FOUND."}}}}},
 "components": {"schemas": {
   "p.CreateThingRequest": {"type": "object", "required": ["name", "node"], "x-cel": ["name.node: a named thing has a node"],
     "properties": {
       "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^(a|b)$"},
       "parentId": {"anyOf": [{"enum": [""]}, {"type": "string", "maxLength": 5}]},
       "size": {"type": ["string", "integer"], "format": "int64", "pattern": "^-?[0-9]+$", "minimum": 0},
       "odd": {"type": "string", "x-future": 3},
       "node": {"$ref": "#/components/schemas/p.Node"}}},
   "p.Node": {"type": "object", "required": ["label"], "properties": {
       "label": {"type": "string", "description": "What the node is called."},
       "children": {"type": "array", "maxItems": 4, "items": {"$ref": "#/components/schemas/p.Node"}},
       "at": {"anyOf": [{"$ref": "#/components/schemas/google.protobuf.Timestamp"}, {"type": "null"}]}}},
   "p.Thing": {"type": "object", "properties": {"node": {"$ref": "#/components/schemas/p.Node"}}},
   "google.protobuf.Timestamp": {"type": "string", "format": "date-time"}}}
}`

func TestRender(t *testing.T) {
	out, err := render([]byte(tiny))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"## things",
		"`POST /api/x/things/create`",
		"Makes a thing.",
		"| `name` | string | yes | 1 to 8 characters; matches `^(a\\|b)$` |",
		"| `parentId` | string (or \"\") |  | at most 5 characters |",
		"| `size` | int64 (a number or a decimal string) |  | at least 0 |",
		"| `odd` | string |  | x-future: `3` |",
		"| `node` | [`Node`](#msg-node) | yes |  |",
		"| `node.label` | string | yes | What the node is called. |",
		"| `node.children` | list of [`Node`](#msg-node) |  | at most 4 items |",
		"| `node.at` | string (date-time) or null |  |  |",
		"- name.node: a named thing has a node",
		"Answer 200: [`Thing`](#msg-thing)",
		"Errors: 404 NOT_FOUND.",
		"<a id=\"msg-node\"></a>\n\n### Node",
		"<a id=\"msg-thing\"></a>\n\n### Thing",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the reference lacks %q:\n%s", want, got)
		}
	}
	// Node contains itself: its children are listed once, not nested for ever.
	if strings.Contains(got, "node.children[].") {
		t.Errorf("a message that contains itself was flattened into itself:\n%s", got)
	}
	again, err := render([]byte(tiny))
	if err != nil || !bytes.Equal(out, again) {
		t.Error("two renderings of one document differ")
	}
}

func TestRenderRefusesADanglingReference(t *testing.T) {
	doc := strings.Replace(tiny, `"p.CreateThingRequest": {`, `"p.Unused": {`, 1)
	if _, err := render([]byte(doc)); err == nil {
		t.Fatal("a request naming no schema rendered")
	}
}
