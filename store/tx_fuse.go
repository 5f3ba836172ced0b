package store

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Fusing the last writes of a two-trip transaction into one statement.
//
// A create's second round trip carries the resource's insert, its idempotency record, its event
// and its work item: four statements whose answers nothing needs but the first one's row. Each
// statement has a fixed cost on the server (bind, executor start and end, its own snapshot and
// locks taken again), which on CockroachDB is larger still. fused sends such a run as one
// statement, every write a data-modifying WITH arm:
//
//	WITH w0 AS (INSERT INTO load_balancers ... RETURNING ...), w1 AS (INSERT INTO idempotency_keys ...), ...
//	SELECT * FROM w0
//
// Both engines execute every data-modifying arm exactly once, whether the main query reads it
// or not, inside the same transaction, and a failing arm fails the statement with its own
// SQLSTATE and constraint (a twin's idempotency_keys_pkey still reaches the caller as it did).
// The arms share one snapshot and cannot see one another's writes, so a run only ever holds
// writes of distinct tables that read no table another arm writes: inserts and upserts of rows
// whose values are all parameters. Foreign keys are checked at the end of the statement, after
// every arm has run, so a row and the rows referencing it may share a statement. A write the
// fuser cannot classify, or one whose answer is judged by the client, ends the run and is sent
// on its own, as before.

// fusable reports the table a write inserts into when it may join a fused statement: an
// INSERT whose rows are made of parameters and constants (VALUES, or a SELECT without FROM that
// unnests a parameter), with or without ON CONFLICT, reading no table.
func fusable(sql string) (table string, ok bool) {
	f := fusableSeen.get(sql, func() fusableAnswer {
		table, ok := classify(sql)
		return fusableAnswer{table, ok}
	})
	return f.table, f.ok
}

// The statements a replica sends are the code's constants, so what fusable and renumber make of
// one is worked out once and kept: on a create's path the upper-casing, splitting and regular
// expression cost more than the rest of the fuse. A statement built at run time (an IN list of
// its own length) could make these memos grow without end, so each keeps at most
// cachedStatements entries and works the rest out every time.
var (
	fusableSeen memo[string, fusableAnswer]
	renumbered  memo[renumberKey, string]
)

const cachedStatements = 1024

type fusableAnswer struct {
	table string
	ok    bool
}

type renumberKey struct {
	sql string
	by  int
}

// memo keeps the answers of a pure function, at most cachedStatements of them.
type memo[K comparable, V any] struct {
	m    sync.Map
	size atomic.Int64
}

// get returns the answer kept for k, or works it out with compute and keeps it while there is room.
func (c *memo[K, V]) get(k K, compute func() V) V {
	if v, hit := c.m.Load(k); hit {
		return v.(V)
	}
	v := compute()
	if c.size.Load() < cachedStatements {
		if _, loaded := c.m.LoadOrStore(k, v); !loaded {
			c.size.Add(1)
		}
	}
	return v
}

// classify is fusable's answer, worked out.
func classify(sql string) (table string, ok bool) {
	s := strings.TrimSpace(sql)
	const prefix = "INSERT INTO "
	if !strings.HasPrefix(s, prefix) {
		return "", false
	}
	rest := s[len(prefix):]
	end := strings.IndexAny(rest, " (\n\t")
	if end <= 0 {
		return "", false
	}
	for _, word := range strings.Fields(strings.ToUpper(rest)) {
		// FROM or WITH would read a table, which another arm may be writing.
		if word == "FROM" || word == "WITH" || strings.HasPrefix(word, "(SELECT") {
			return "", false
		}
	}
	return rest[:end], true
}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// renumber shifts sql's placeholders $n to $(n+by).
func renumber(sql string, by int) string {
	if by == 0 {
		return sql
	}
	return renumbered.get(renumberKey{sql, by}, func() string {
		return placeholder.ReplaceAllStringFunc(sql, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			return "$" + strconv.Itoa(n+by)
		})
	})
}

// fused returns w with every run of fusable writes (distinct tables, at most one whose row is
// read) sent as one statement. Items keep their order; errors name every write of their run.
// The events' request ids are filled in first, from ctx, as send does: the fused statement
// holds copies of the arguments.
func (w *Writes) fused(ctx context.Context) *Writes {
	w.fillRequestIDs(ctx)
	out := &Writes{}
	queued := w.batch.QueuedQueries
	for i := 0; i < len(w.items); {
		j, tables, rowAt := i, map[string]bool{}, -1
		for ; j < len(w.items); j++ {
			it := w.items[j]
			table, ok := fusable(queued[j].SQL)
			if !ok || it.clientCheck || tables[table] || (it.row && rowAt >= 0) {
				break
			}
			tables[table] = true
			if it.row {
				rowAt = j
			}
		}
		if j-i < 2 {
			// Nothing to fuse: the write goes as it came.
			out.batch.QueuedQueries = append(out.batch.QueuedQueries, queued[i])
			out.items = append(out.items, w.items[i])
			i++
			continue
		}
		out.fuse(queued[i:j], w.items[i:j], rowAt-i)
		i = j
	}
	return out
}

// fusedRunKey names a run of statements fused into one: a create sends the same run every time,
// so its fused text is worked out once (fusedSeen), like fusable's and renumber's answers.
type fusedRunKey struct {
	n   int
	sql [maxMemoRun]string
	row int
}

// maxMemoRun is the longest run whose fused text is kept; a longer one is worked out each time.
const maxMemoRun = 8

var fusedSeen memo[fusedRunKey, string]

// fusedText is the statement that runs qs as arms of one WITH, returning the row of qs[row]
// (row < 0: none).
func fusedText(qs []*pgx.QueuedQuery, row int) string {
	build := func() string {
		var sql strings.Builder
		sql.WriteString("WITH ")
		args := 0
		for k, q := range qs {
			if k > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("w" + strconv.Itoa(k) + " AS (" + renumber(q.SQL, args) + ")")
			args += len(q.Arguments)
		}
		if row >= 0 {
			sql.WriteString(" SELECT * FROM w" + strconv.Itoa(row))
		} else {
			sql.WriteString(" SELECT 1")
		}
		return sql.String()
	}
	if len(qs) > maxMemoRun {
		return build()
	}
	key := fusedRunKey{n: len(qs), row: row}
	for k, q := range qs {
		key.sql[k] = q.SQL
	}
	return fusedSeen.get(key, build)
}

// fuse queues qs as one statement; row is the index of the write whose row is read, or -1.
func (w *Writes) fuse(qs []*pgx.QueuedQuery, items []writeItem, row int) {
	var args []any
	what := make([]string, 0, len(qs))
	for k, q := range qs {
		args = append(args, q.Arguments...)
		what = append(what, items[k].what)
	}
	w.batch.Queue(fusedText(qs, row), args...)
	read := func(br pgx.BatchResults) error { _, err := br.Exec(); return err }
	if row >= 0 {
		read = items[row].read
	}
	w.items = append(w.items, writeItem{what: strings.Join(what, " + "), read: read})
}
