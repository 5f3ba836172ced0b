package core

import (
	"encoding/json"
	"strings"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/store"
)

// Paging. Every list answers, without pageSize or pageToken, as the seed says: at most 1000 in
// its order. pageSize (1-1000) or pageToken asks for one page, and nextPageToken comes back when
// more follow. The token is the page's last sort key sealed (AES-GCM, the server's keyring)
// with the list, the tenant and the filters as associated data: a client can neither read nor
// change it, and a token of another tenant or of other filters does not open. Pages continue
// strictly after that key (keyset paging, never an offset), so concurrent creates and deletes
// never repeat or skip a row that exists throughout.

const defaultListSize = 1000

// pageAAD separates page tokens from every other sealed value.
const pageAAD = "better-compute page token v1\x00"

type pageKey struct {
	CreatedAt int64  `json:"c,omitempty"` // microseconds since the epoch (the database's precision)
	ID        string `json:"i"`
}

// page is the decoded paging part of a list request.
type page struct {
	size  int           // rows the caller gets
	after *store.Cursor // nil = from the first row
	aad   []byte
}

// openPage validates pageSize and pageToken of list method for tenant with its filters.
func (s *Service) openPage(method, tenant string, size int32, token string, filters ...string) (page, error) {
	p := page{size: defaultListSize,
		aad: []byte(pageAAD + method + "\x00" + tenant + "\x00" + strings.Join(filters, "\x00"))}
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
	p.after = &store.Cursor{CreatedAt: time.UnixMicro(k.CreatedAt).UTC(), ID: k.ID}
	return p, nil
}

// limit is the rows to read: one more than the page, to know whether another follows.
func (p page) limit() int { return p.size + 1 }

// finish cuts rows to the page and seals the token of the next page when more follow.
func finish[R any](s *Service, p page, rows []R, key func(R) store.Cursor) ([]R, string, error) {
	if len(rows) <= p.size {
		return rows, "", nil
	}
	rows = rows[:p.size]
	last := key(rows[len(rows)-1])
	k := pageKey{ID: last.ID}
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
