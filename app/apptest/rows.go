package apptest

import (
	"context"
	"fmt"
	"testing"
)

// RowCounts counts the rows of every table of the stack's schema: a call that must write nothing
// (bad input, validateOnly) leaves them all as they were.
func (s *Stack) RowCounts(t testing.TB) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	rows, err := s.App.DB.Q().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	out := map[string]int64{}
	for _, n := range names {
		var c int64
		if err := s.App.DB.Q().QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, n)).Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[n] = c
	}
	return out
}
