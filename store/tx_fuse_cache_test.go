package store

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestFuseCachesAreBounded: statements built at run time do not grow what fusable, renumber and
// fusedText keep beyond cachedStatements, and past the bound the answers are still worked out
// right.
func TestFuseCachesAreBounded(t *testing.T) {
	for i := range 3 * cachedStatements {
		sql := fmt.Sprintf(`INSERT INTO bounded_%d (a, b) VALUES ($1, $2)`, i)
		if table, ok := fusable(sql); !ok || table != fmt.Sprintf("bounded_%d", i) {
			t.Fatalf("fusable(%q) = %q, %v", sql, table, ok)
		}
		if got, want := renumber(sql, 3), fmt.Sprintf(`INSERT INTO bounded_%d (a, b) VALUES ($4, $5)`, i); got != want {
			t.Fatalf("renumber = %q, want %q", got, want)
		}
		run := []*pgx.QueuedQuery{{SQL: `INSERT INTO first (a) VALUES ($1)`, Arguments: []any{1}}, {SQL: sql, Arguments: []any{2, 3}}}
		want := fmt.Sprintf(`WITH w0 AS (INSERT INTO first (a) VALUES ($1)), w1 AS (INSERT INTO bounded_%d (a, b) VALUES ($2, $3)) SELECT * FROM w1`, i)
		for range 2 { // worked out, then (while there is room) remembered
			if got := fusedText(run, 1); got != want {
				t.Fatalf("fusedText = %q, want %q", got, want)
			}
		}
	}
	if n := fusedSeen.size.Load(); n > cachedStatements {
		t.Errorf("fusedText keeps %d runs, bound %d", n, cachedStatements)
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
