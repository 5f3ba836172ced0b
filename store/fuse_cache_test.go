package store

import (
	"fmt"
	"testing"
)

// TestFuseCachesAreBounded: statements built at run time do not grow what fusable and renumber
// keep beyond cachedStatements, and past the bound the answers are still worked out right.
func TestFuseCachesAreBounded(t *testing.T) {
	for i := range 3 * cachedStatements {
		sql := fmt.Sprintf(`INSERT INTO bounded_%d (a, b) VALUES ($1, $2)`, i)
		if table, ok := fusable(sql); !ok || table != fmt.Sprintf("bounded_%d", i) {
			t.Fatalf("fusable(%q) = %q, %v", sql, table, ok)
		}
		if got, want := renumber(sql, 3), fmt.Sprintf(`INSERT INTO bounded_%d (a, b) VALUES ($4, $5)`, i); got != want {
			t.Fatalf("renumber = %q, want %q", got, want)
		}
	}
	if n := fusableSeen.size.Load(); n > cachedStatements {
		t.Errorf("fusable keeps %d statements, bound %d", n, cachedStatements)
	}
	if n := renumbered.size.Load(); n > cachedStatements {
		t.Errorf("renumber keeps %d statements, bound %d", n, cachedStatements)
	}
	if _, ok := fusable(`UPDATE a SET x = 1`); ok {
		t.Error("an UPDATE fused")
	}
}
