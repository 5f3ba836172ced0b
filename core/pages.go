package core

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/store"
)

// Paging. Every list answers, without pageSize or pageToken, as it always did: at most 1000 in
// its order (usage 10000, quotas all), with nextPageToken when more follow. pageSize (1-1000) or
// pageToken asks for one page (pageToken alone: a page of the list's default size). The token is
// the page's last sort key sealed (AES-GCM, the server's keyring) with the list, the tenant and
// the filters as associated data: a client can neither read nor change it, and a token of
// another list, tenant or filters does not open. Pages continue strictly after that key (keyset
// paging, never an offset), so concurrent creates and deletes never repeat or skip a row that
// exists throughout.

// defaultListSize is the most rows a list answers without paging, and the largest page.
const defaultListSize = 1000

// pageAAD separates page tokens from every other sealed value.
const pageAAD = "better-compute page token v1\x00"

type pageKey struct {
	CreatedAt int64  `json:"c,omitempty"` // microseconds since the epoch (the database's precision)
	ID        string `json:"i"`
	Second    string `json:"s,omitempty"`
}

// page is the decoded paging part of a list request.
type page struct {
	size  int           // rows the caller gets
	after *store.Cursor // nil = from the first row
	aad   []byte
}

// PageRequest is what every paged list request has.
type PageRequest interface {
	GetPageSize() int32
	GetPageToken() string
}

// openPage validates pageSize and pageToken of list method for tenant with its filters; deflt is
// the rows the list answers without pageSize.
func (s *Base) openPage(method, tenant string, r PageRequest, deflt int, filters ...string) (page, error) {
	p := page{size: deflt,
		aad: []byte(pageAAD + method + "\x00" + tenant + "\x00" + strings.Join(filters, "\x00"))}
	size, token := r.GetPageSize(), r.GetPageToken()
	if size < 0 || size > defaultListSize {
		return p, apierr.Invalid("pageSize", "pageSize is 1 to %d, got %d", defaultListSize, size)
	}
	if size > 0 {
		p.size = int(size)
	}
	if token == "" {
		return p, nil
	}
	raw, err := s.Keyring.Open(token, p.aad)
	var k pageKey
	if err != nil || json.Unmarshal(raw, &k) != nil || k.ID == "" {
		return p, apierr.Invalid("pageToken", "pageToken is not a token this list gave for this tenant and these filters")
	}
	p.after = &store.Cursor{ID: k.ID, Second: k.Second}
	if k.CreatedAt != 0 {
		p.after.CreatedAt = time.UnixMicro(k.CreatedAt).UTC()
	}
	return p, nil
}

// read is the page as the store reads it: one more row than the page, to know whether another
// follows.
func (p page) read() store.Page { return store.Page{Limit: p.size + 1, After: p.after} }

// finish cuts rows to the page and seals the token of the next page when more follow.
func finish[R any](s *Base, p page, rows []R, key func(R) store.Cursor) ([]R, string, error) {
	if len(rows) <= p.size {
		return rows, "", nil
	}
	rows = rows[:p.size]
	last := key(rows[len(rows)-1])
	k := pageKey{ID: last.ID, Second: last.Second}
	if !last.CreatedAt.IsZero() {
		k.CreatedAt = last.CreatedAt.UnixMicro()
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, "", apierr.InternalErr(err)
	}
	tok, err := s.Keyring.Seal(raw, p.aad)
	if err != nil {
		return nil, "", apierr.InternalErr(err)
	}
	return rows, tok, nil
}

// Listing is one list method, as ListPage runs it.
type Listing[R any] struct {
	Method  string           // binds page tokens to the list ("instances")
	What    string           // the rows' name in a database error ("instance")
	Perm    authz.Permission // on the tenant (see AuthorizeList)
	Access  ListAccess
	Tenant  string   // the tenant the request names ("" for tenants/list)
	Filters []string // every request field that narrows the list: a token binds them
	Default int      // rows without pageSize; 0 = defaultListSize
	Key     func(R) store.Cursor
	Query   func(store.Page) ([]R, error)
}

// ListPage is every list: the list prologue (AuthorizeList), the page (openPage), one query,
// the page cut and its token (finish), then conv over the page's rows.
func ListPage[R, P any](ctx context.Context, s *Base, r PageRequest, l Listing[R], conv func([]R) ([]P, error)) ([]P, string, error) {
	if _, err := s.AuthorizeList(ctx, l.Perm, l.Tenant, l.Access); err != nil {
		return nil, "", err
	}
	deflt := l.Default
	if deflt == 0 {
		deflt = defaultListSize
	}
	pg, err := s.openPage(l.Method, l.Tenant, r, deflt, l.Filters...)
	if err != nil {
		return nil, "", err
	}
	rows, err := l.Query(pg.read())
	if err != nil {
		return nil, "", StoreErr(err, l.What)
	}
	rows, next, err := finish(s, pg, rows, l.Key)
	if err != nil {
		return nil, "", err
	}
	out, err := conv(rows)
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Each converts a page row by row (convertAll).
func Each[R, P any](conv func(R) (P, error)) func([]R) ([]P, error) {
	return func(rows []R) ([]P, error) { return convertAll(rows, conv) }
}

// ByID is the sort key of the lists in id order (ids are time-ordered: creation order).
func ByID(id string) store.Cursor { return store.Cursor{ID: id} }

// ByCreated is the sort key of the lists in (created_at, id) order.
func ByCreated(at time.Time, id string) store.Cursor { return store.Cursor{CreatedAt: at, ID: id} }
