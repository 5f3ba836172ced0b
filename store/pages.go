package store

import "time"

// Cursor is where a page of a list ends: the sort key of its last row. Lists continue strictly
// after it (keyset paging), so rows created or deleted meanwhile never shift a page: every row
// that exists throughout is listed exactly once.
type Cursor struct {
	CreatedAt time.Time // the lists in creation order sort by (created_at, id); zero for the rest
	ID        string    // the row's id, or the first key of a list sorted by two strings
	Second    string    // the second key of a list sorted by two strings (a quota's resource)
}

// Page bounds one list statement: at most Limit rows (0: 1000), strictly after After (nil: from
// the first row). Core reads one row more than it answers, to know whether another page follows.
type Page struct {
	Limit int
	After *Cursor
}

// MaxListLimit is the most rows one paged list statement reads: a page of 1000 and one more,
// which says whether another page follows.
const MaxListLimit = 1001

// NoLimit is the Limit of a list whose seed answer has no bound (quotas).
const NoLimit = 1<<31 - 1

func (p Page) limit() int {
	if p.Limit <= 0 {
		return 1000
	}
	return p.Limit
}

// afterID is the id (or first string key) to continue after; "" from the first row.
func (p Page) afterID() string {
	if p.After == nil {
		return ""
	}
	return p.After.ID
}

// afterTime is the created_at to continue after (with afterID).
func (p Page) afterTime() time.Time {
	if p.After == nil {
		return time.Time{}
	}
	return p.After.CreatedAt
}

// afterSecond is the second string key to continue after (with afterID).
func (p Page) afterSecond() string {
	if p.After == nil {
		return ""
	}
	return p.After.Second
}
