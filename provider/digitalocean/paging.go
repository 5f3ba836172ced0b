package digitalocean

import (
	"context"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// maxPages bounds a scan so a server that always answers "next" cannot loop a call forever.
const maxPages = 1000

// findPaged walks a list page by page and returns the first item match accepts, stopping at
// the page that holds it.
func findPaged[T any](ctx context.Context, pageSize int,
	list func(context.Context, *godo.ListOptions) ([]T, *godo.Response, error), match func(T) bool,
) (T, bool, error) {
	var zero T
	opt := &godo.ListOptions{Page: 1, PerPage: pageSize}
	for range maxPages {
		items, resp, err := list(ctx, opt)
		if err != nil {
			return zero, false, err
		}
		for _, it := range items {
			if match(it) {
				return it, true, nil
			}
		}
		if len(items) == 0 || resp == nil || resp.Links == nil || resp.Links.IsLastPage() {
			return zero, false, nil
		}
		opt.Page++
	}
	return zero, false, nil
}

// eachPage walks a whole list page by page, giving every item to visit.
func eachPage[T any](ctx context.Context, pageSize int,
	list func(context.Context, *godo.ListOptions) ([]T, *godo.Response, error), visit func(T),
) error {
	opt := &godo.ListOptions{Page: 1, PerPage: pageSize}
	for range maxPages {
		items, resp, err := list(ctx, opt)
		if err != nil {
			return err
		}
		for _, it := range items {
			visit(it)
		}
		if len(items) == 0 || resp == nil || resp.Links == nil || resp.Links.IsLastPage() {
			return nil
		}
		if provider.LowPriority(ctx) {
			ctx = context.WithValue(provider.WithNormalPriority(ctx), continuedPollKey{}, true)
		}
		opt.Page++
	}
	return nil
}

type continuedPollKey struct{}

// continuedPoll reports whether ctx reads a later page of a list whose first page went out as a
// status poll: the page is sent at normal priority (a half-read list is wasted) but charged to
// the polls' share of the budget.
func continuedPoll(ctx context.Context) bool {
	v, _ := ctx.Value(continuedPollKey{}).(bool)
	return v
}
