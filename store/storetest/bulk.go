package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"better-compute.dev/compute/store"
)

// Copies describes rows to load with SQL (not through the API): the first row of Table that
// Where selects (a template made through the API, so every column holds what the service
// writes) copied N times. Set replaces a column's value by an expression of the template's
// columns and of g, the copy's number from 1 to N; unique columns must be set from g.
type Copies struct {
	Table string
	Where string // may use the arguments given to Load
	N     int
	Set   map[string]string
}

// Load runs each copy as one INSERT ... SELECT over generate_series, checks that each wrote N
// rows, then has the planner read the new statistics (ANALYZE). args are the arguments of the
// Where clauses (every copy is given them all).
func Load(tb testing.TB, q store.Querier, copies []Copies, args ...any) {
	tb.Helper()
	ctx := context.Background()
	// Every parameter is mentioned once, so each statement takes all of args.
	uses := make([]string, len(args))
	for i := range args {
		uses[i] = fmt.Sprintf("$%d::text IS NOT NULL", i+1)
	}
	for _, c := range copies {
		cols := tableColumns(tb, q, c.Table)
		exprs := make([]string, len(cols))
		for i, col := range cols {
			exprs[i] = col
			if e, ok := c.Set[col]; ok {
				exprs[i] = e
			}
		}
		where := c.Where
		if len(uses) > 0 {
			where = "(" + where + ") AND " + strings.Join(uses, " AND ")
		}
		sql := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM (SELECT * FROM %s WHERE %s LIMIT 1) AS tpl CROSS JOIN generate_series(1, %d) AS g`,
			c.Table, strings.Join(cols, ", "), strings.Join(exprs, ", "), c.Table, where, c.N)
		tag, err := q.Exec(ctx, sql, args...)
		if err != nil {
			tb.Fatalf("load %s: %v\n%s", c.Table, err, sql)
		}
		if tag.RowsAffected() != int64(c.N) {
			tb.Fatalf("load %s: %d rows, want %d (no template row?)", c.Table, tag.RowsAffected(), c.N)
		}
	}
	if _, err := q.Exec(ctx, "ANALYZE"); err != nil {
		tb.Fatal(err)
	}
}

// tableColumns lists a table's columns in the schema of the search path.
func tableColumns(tb testing.TB, q store.Querier, table string) []string {
	tb.Helper()
	rows, err := q.Query(context.Background(), `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`, table)
	if err != nil {
		tb.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(cols) == 0 {
		tb.Fatalf("columns of %s: %v %v", table, cols, err)
	}
	return cols
}
