package vps

import (
	"context"
	"time"

	"better-compute.dev/compute/store"
)

// Budget is the request budget of provider tokens kept in the database, shared by every
// replica; give it to digitalocean.Options.Budget.
type Budget struct{ DB *store.DB }

// Take leases up to want requests from the key's bucket in one round trip.
func (b Budget) Take(ctx context.Context, key string, capacity, perSecond float64, want int, reserve float64) (int, float64, time.Time, error) {
	l, err := store.TakeBudget(ctx, b.DB, store.BudgetParams{Key: key, Capacity: capacity, PerSecond: perSecond, Want: want, Reserve: reserve})
	return l.Granted, l.Left, l.BlockedUntil, err
}

// Block records that the provider refuses the key's requests until until.
func (b Budget) Block(ctx context.Context, key string, until time.Time) error {
	return store.BlockBudget(ctx, b.DB, key, until)
}
