package authz

import (
	"regexp"
	"strings"
	"testing"
)

// ownedRelation is one permission relation defined on a type a tenant owns.
type ownedRelation struct {
	typ, name, kind, body string // kind: read, update or manage
}

// ownedRelations lists the permission relations of every tenant-owned type in the model.
func ownedRelations() []ownedRelation {
	define := regexp.MustCompile(`^\s*define (\w+_(read|update|manage)): (.*)$`)
	var out []ownedRelation
	var typ string
	owned := false
	for _, line := range strings.Split(ModelDSL(), "\n") {
		if strings.HasPrefix(line, "type ") {
			typ, owned = strings.TrimPrefix(line, "type "), false
			continue
		}
		if strings.Contains(line, "define tenant:") {
			owned = true
			continue
		}
		if m := define.FindStringSubmatch(line); m != nil && owned {
			out = append(out, ownedRelation{typ: typ, name: m[1], kind: m[2], body: strings.TrimSpace(m[3])})
		}
	}
	return out
}

// TestReadRelationsInheritFromTenant keeps true what core's list prologue (authorizeList) relies
// on to skip per-item checks: on every type owned by a tenant, each *_read relation is exactly
// "reader or <same> from tenant", a union. Holding the permission on the tenant then grants it
// on every object of the tenant, so a per-item check cannot narrow a list whose tenant check
// passed. A relation that intersects or excludes ("and", "but not") would narrow it: this test
// then fails, and per-item checks must come back for that type.
func TestReadRelationsInheritFromTenant(t *testing.T) {
	checked := 0
	for _, r := range ownedRelations() {
		if r.kind != "read" {
			continue
		}
		checked++
		if want := "reader or " + r.name + " from tenant"; r.body != want {
			t.Errorf("type %s: %s is %q, want %q (lists skip per-item checks on that assumption)", r.typ, r.name, r.body, want)
		}
	}
	if checked == 0 {
		t.Fatal("no read relation of a tenant-owned type found in the model")
	}
}

// TestObjectPermissionsInheritFromTenant keeps true what core's by-id prologue (authorizeOwned)
// relies on to ask about the owning tenant first: on every type owned by a tenant, each
// permission relation (read, update, manage) is exactly "<direct role> or <same> from tenant".
// Holding a permission on the tenant then grants it on every object the tenant owns. A relation
// that intersects or excludes would break that: this test then fails.
func TestObjectPermissionsInheritFromTenant(t *testing.T) {
	rels := ownedRelations()
	for _, r := range rels {
		role := "manager"
		if r.kind == "read" {
			role = "reader"
		}
		if want := role + " or " + r.name + " from tenant"; r.body != want {
			t.Errorf("type %s: %s is %q, want %q (by-id calls ask the tenant first on that assumption)", r.typ, r.name, r.body, want)
		}
	}
	if len(rels) < 20 {
		t.Fatalf("only %d permission relations of tenant-owned types found in the model", len(rels))
	}
}
