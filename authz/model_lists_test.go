package authz

import (
	"regexp"
	"strings"
	"testing"
)

// TestReadRelationsInheritFromTenant keeps true what core's list prologue (authorizeList) relies
// on to skip per-item checks: on every type owned by a tenant, each *_read relation is exactly
// "reader or <same> from tenant", a union. Holding the permission on the tenant then grants it
// on every object of the tenant, so a per-item check cannot narrow a list whose tenant check
// passed. A relation that intersects or excludes ("and", "but not") would narrow it: this test
// then fails, and per-item checks must come back for that type.
func TestReadRelationsInheritFromTenant(t *testing.T) {
	define := regexp.MustCompile(`^\s*define (\w+_read): (.*)$`)
	var typ string
	owned, checked := false, 0
	for _, line := range strings.Split(ModelDSL(), "\n") {
		if strings.HasPrefix(line, "type ") {
			typ, owned = strings.TrimPrefix(line, "type "), false
			continue
		}
		if strings.Contains(line, "define tenant:") {
			owned = true
			continue
		}
		m := define.FindStringSubmatch(line)
		if m == nil || !owned {
			continue
		}
		checked++
		if want := "reader or " + m[1] + " from tenant"; strings.TrimSpace(m[2]) != want {
			t.Errorf("type %s: %s is %q, want %q (lists skip per-item checks on that assumption)", typ, m[1], m[2], want)
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
	define := regexp.MustCompile(`^\s*define (\w+_(read|update|manage)): (.*)$`)
	var typ string
	owned, checked := false, 0
	for _, line := range strings.Split(ModelDSL(), "\n") {
		if strings.HasPrefix(line, "type ") {
			typ, owned = strings.TrimPrefix(line, "type "), false
			continue
		}
		if strings.Contains(line, "define tenant:") {
			owned = true
			continue
		}
		m := define.FindStringSubmatch(line)
		if m == nil || !owned {
			continue
		}
		checked++
		role := "manager"
		if m[2] == "read" {
			role = "reader"
		}
		if want := role + " or " + m[1] + " from tenant"; strings.TrimSpace(m[3]) != want {
			t.Errorf("type %s: %s is %q, want %q (by-id calls ask the tenant first on that assumption)", typ, m[1], m[3], want)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d permission relations of tenant-owned types found in the model", checked)
	}
}
