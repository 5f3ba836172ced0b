package store

import "time"

// Cursor is where a page of a list ends: the sort key of its last row. Lists continue strictly
// after it (keyset paging), so rows created or deleted meanwhile never shift a page: every row
// that exists throughout is listed exactly once.
type Cursor struct {
	CreatedAt time.Time // the lists in creation order sort by (created_at, id)
	ID        string
}

// MaxListLimit is the most rows one list statement reads: a page of 1000 and one more, which
// says whether another page follows.
const MaxListLimit = 1001

func clampLimit(n int) int {
	if n <= 0 || n > MaxListLimit {
		return 1000
	}
	return n
}
