package sim

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/digitalocean/godo"
)

// Page sizes DigitalOcean applies when per_page is absent or too large.
const (
	defaultPerPage = 20
	maxPerPage     = 200
)

// pageOf is one page of a list answer: the item bounds and the links and meta to send.
type pageOf struct {
	lo, hi int
	links  *godo.Links
	meta   *godo.Meta
}

// paginate reads page and per_page from the query and builds the links godo follows: first
// and prev on every page but the first, next and last on every page but the last, each a full
// URL that keeps the request's other query parameters (filters).
func paginate(r *http.Request, total int) (pageOf, *apiError) {
	q := r.URL.Query()
	page, perPage := 1, defaultPerPage
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pageOf{}, errBadRequest("page must be a positive integer")
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pageOf{}, errBadRequest("per_page must be a positive integer")
		}
		perPage = min(n, maxPerPage)
	}
	last := max((total+perPage-1)/perPage, 1)
	p := pageOf{
		lo:    min((page-1)*perPage, total),
		hi:    min(page*perPage, total),
		links: &godo.Links{},
		meta:  &godo.Meta{Total: total},
	}
	link := func(n int) string {
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path}
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(n))
		v.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = v.Encode()
		return u.String()
	}
	pages := &godo.Pages{}
	if page > 1 {
		pages.First = link(1)
		pages.Prev = link(min(page-1, last))
	}
	if page < last {
		pages.Next = link(page + 1)
		pages.Last = link(last)
	}
	if *pages != (godo.Pages{}) {
		p.links.Pages = pages
	}
	return p, nil
}
