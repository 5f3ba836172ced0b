package repository

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// engine are the store files every part may use: the transaction engine (Tx, Querier, the
// two-trip batch Reads/Writes), the error sentinels and the page of a list. They hold no entity.
var engine = []string{"querier.go", "tx.go", "tx_twotrips.go", "tx_writes.go", "errors.go", "pages.go"}

// coreParts are core's parts (folders under core/, their subfolders included) and the store
// files, besides engine, that declare what each may name. Each list is what the part uses
// today: a part that needs another entity's functions shows it here, in review.
var coreParts = map[string][]string{
	"loadbalancers": {"loadbalancers.go", "instances.go", "networks.go", "certificates.go", "pools.go",
		"quota_booking.go", "idempotency.go", "workqueue.go", "tenancy.go"},
	"tenancy":    {"tenancy.go", "pools.go"},
	"pools":      {"pools.go", "substrates.go", "workqueue.go", "tenancy.go"},
	"resources":  {"networks.go", "certificates.go", "instances.go", "loadbalancers.go", "pools.go", "workqueue.go", "tenancy.go"},
	"metal":      {"metal.go", "workqueue.go"},
	"substrates": {"substrates.go", "workqueue.go"},
	"events":     {"events.go", "events_feed.go", "usage.go"},
}

// TestCorePartsStoreSurface: each part of core names only what its allowlist's store files (and
// the engine's) declare, reaches the database only through core.Store (never a *store.DB), and
// meets the other parts only through core and store: no part imports another, and core imports
// no part. A call through core.Store counts as the store functions that method calls.
func TestCorePartsStoreSurface(t *testing.T) {
	root := moduleRoot(t)
	declared := storeDeclarations(t, root)
	handle := storeHandle(t, root)
	parts := slices.Sorted(func(yield func(string) bool) {
		for p := range coreParts {
			if !yield(p) {
				return
			}
		}
	})
	dirs, err := os.ReadDir(filepath.Join(root, "core"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, ok := coreParts[d.Name()]; d.IsDir() && !ok {
			t.Errorf("core/%s is a part with no allowlist in coreParts", d.Name())
		}
	}
	for _, part := range parts {
		allowed := map[string]bool{}
		for _, f := range append(slices.Clone(engine), coreParts[part]...) {
			allowed[f] = true
		}
		used := map[string]bool{}
		for _, file := range goFiles(t, filepath.Join(root, "core", part)) {
			f := parse(t, file)
			rel, _ := filepath.Rel(root, file)
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, other := range parts {
					if within(module+"/core/"+other)(path) && other != part {
						t.Errorf("%s imports %s: parts meet only through core and store", rel, path)
					}
				}
			}
			for name := range storeNames(f, handle) {
				used[name] = true
				switch decl, ok := declared[name]; {
				case name == "DB":
					t.Errorf("part %s names store.DB (%s): a part reaches the database through core.Store", part, rel)
				case !ok:
					t.Errorf("part %s names store.%s (%s), which no store file declares", part, name, rel)
				case !allowed[decl]:
					t.Errorf("part %s calls store.%s (%s), declared in store/%s, which is not in its allowlist (coreParts)", part, name, rel, decl)
				}
			}
		}
		// CORE_PARTS_DUMP=1 go test -v -run TestCorePartsStoreSurface lists what each part names,
		// by file: the allowlists are derived from it.
		if os.Getenv("CORE_PARTS_DUMP") != "" {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range used {
					if !yield(declared[n] + ":" + n) {
						return
					}
				}
			})
			t.Logf("%s: %s", part, strings.Join(names, " "))
		}
		// The allowlist stays as small as the code: a file the part no longer uses is dropped.
		files := map[string]bool{}
		for name := range used {
			files[declared[name]] = true
		}
		for _, f := range coreParts[part] {
			if !files[f] {
				t.Errorf("part %s's allowlist names store/%s, which it no longer uses: drop it", part, f)
			}
		}
	}
	for _, file := range goFiles(t, filepath.Join(root, "core")) {
		if filepath.Dir(file) != filepath.Join(root, "core") {
			continue
		}
		for _, imp := range parse(t, file).Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, part := range parts {
				if within(module + "/core/" + part)(path) {
					t.Errorf("core/%s imports %s: the base imports no part", filepath.Base(file), path)
				}
			}
		}
	}
}

// storeNames are the store declarations a file names: store.X, a method of the two-trip batch
// (Reads, Writes) called on a value, and X.Store.M through core.Store (its method's store names).
func storeNames(f *ast.File, handle map[string][]string) map[string]bool {
	local := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == module+"/store" {
			local = "store"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		switch x := sel.X.(type) {
		case *ast.Ident:
			if x.Name == local && local != "" {
				out[sel.Sel.Name] = true
			} else if batchMethod[sel.Sel.Name] != "" && x.Obj != nil {
				out[batchMethod[sel.Sel.Name]] = true
			}
		case *ast.SelectorExpr:
			if x.Sel.Name == "Store" {
				for _, name := range handle[sel.Sel.Name] {
					out[name] = true
				}
			}
		}
		return true
	})
	return out
}

// batchMethod maps the methods of store.Reads and store.Writes to a name declared in the same
// file (filled by storeDeclarations): w.AppendEvent(e) queues what store.AppendEvent runs.
var batchMethod = map[string]string{}

// storeDeclarations maps each top-level name of package store (functions, types, variables,
// constants) to the file that declares it, and the batch's methods to a name of their file.
func storeDeclarations(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, file := range goFiles(t, filepath.Join(root, "store")) {
		base := filepath.Base(file)
		f := parse(t, file)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					out[d.Name.Name] = base
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && (id.Name == "Reads" || id.Name == "Writes") && d.Name.IsExported() {
					// A key of its own, so that the method counts for its file.
					key := id.Name + "." + d.Name.Name
					out[key] = base
					batchMethod[d.Name.Name] = key
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = base
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = base
						}
					}
				}
			}
		}
	}
	return out
}

// storeHandle maps each method of core.Store (core/store.go) to the store names it uses.
func storeHandle(t *testing.T, root string) map[string][]string {
	t.Helper()
	f := parse(t, filepath.Join(root, "core", "store.go"))
	out := map[string][]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "store" {
					out[fn.Name.Name] = append(out[fn.Name.Name], sel.Sel.Name)
				}
			}
			return true
		})
	}
	if len(out["ExecuteTx"]) == 0 {
		t.Fatal("core/store.go: core.Store.ExecuteTx calls no store function; the check cannot see the handle")
	}
	return out
}

// goFiles lists the non-test Go files under dir, its subfolders included.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func parse(t *testing.T, file string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
