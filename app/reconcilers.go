package app

import (
	"context"
	"time"

	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/provider/digitalocean"
	"better-compute.dev/compute/reconcile"
	metalrec "better-compute.dev/compute/reconcile/metal"
	"better-compute.dev/compute/reconcile/substrates"
	"better-compute.dev/compute/reconcile/vps"
	"better-compute.dev/compute/store"
)

// pruneKind is the periodic pass that removes long-idle work items (app/retention.go).
const pruneKind = "work.prune"

// reservationSweepKind is the periodic pass that refunds quota reservations whose replica (of the
// previous version, which booked ahead) died between booking and commit (store/quota_reservations.go).
const reservationSweepKind = "quota.reservations.sweep"

// runReconcilers runs this replica's share of the reconcile work until ctx ends: the
// vps.provider-resources reconciler and its periodic pass, on leases shared with every other
// replica of the database. The runner was built by Start, so a misconfiguration stopped the
// replica there instead of leaving it serving without reconcilers.
func (a *App) runReconcilers(ctx context.Context, runner *reconcile.Runner) {
	log := a.Config.Logger
	rc := a.Config.Reconcilers
	log.Info("reconcilers running", "replica", a.Config.Replica, "leaseTTL", rc.LeaseTTL.String(),
		"periodic", rc.PeriodicInterval.String())
	if err := runner.Run(ctx); err != nil {
		log.Error("reconcilers stopped", "err", err.Error())
		<-ctx.Done()
	}
}

// newRunner wires the reconciler and its periodic pass into a runner holding leases as this
// replica.
func (a *App) newRunner(rc ReconcileConfig) (*reconcile.Runner, error) {
	do := rc.DigitalOcean
	do.Transport = vps.DeadlineTransport(do.Transport)
	if do.Budget == nil {
		// One token's budget is shared by every replica through the database.
		do.Budget = vps.Budget{DB: a.DB}
	}
	rec, err := vps.New(vps.Options{
		DB: a.DB, Keyring: a.Base.Keyring, Factory: digitalocean.NewFactory(do),
		ProviderPoll: rc.ProviderPoll, DependencyPoll: rc.DependencyPoll, CreateWindow: rc.CreateWindow,
		Logger: a.Config.Logger,
	})
	if err != nil {
		return nil, err
	}
	subs, err := substrates.New(substrates.Options{
		DB: a.DB, Keyring: a.Base.Keyring, Factory: digitalocean.NewFactory(do),
		JoinURL: rc.PublicURL(a.URL), CreateWindow: rc.CreateWindow, Logger: a.Config.Logger,
	})
	if err != nil {
		return nil, err
	}
	runner, err := reconcile.New(reconcile.Options{
		DB: a.DB, Holder: a.Config.Replica, Handlers: map[string]reconcile.Handler{
			contract.VPSKind: rec,
			metalrec.Kind:    metalrec.New(a.DB, a.Base.Keyring, a.metalRunner(), a.Config.Logger),
			substrates.Kind:  subs,
		},
		// Metal waits on tenant-named BMCs that may hang: it gets a bounded share, per tenant too.
		Shares:      map[string]reconcile.Share{metalrec.Kind: metalrec.DefaultShare(rc.Concurrency)},
		Concurrency: rc.Concurrency, LeaseTTL: rc.LeaseTTL, PollInterval: rc.PollInterval,
		Backoff:       reconcile.Exponential{Initial: rc.BackoffInitial, Max: rc.BackoffMax, Jitter: 0.2},
		ShutdownGrace: 5 * time.Second, Logger: a.Config.Logger,
	})
	if err != nil {
		return nil, err
	}
	if err := runner.Every(vps.PeriodicKind, rc.PeriodicInterval, rec.Periodic()); err != nil {
		return nil, err
	}
	// Old events, idempotency records, idle work items and closed usage, in bounded batches.
	if err := everyRetention(runner, a.DB, rc.Retention); err != nil {
		return nil, err
	}
	if err := runner.Every(reservationSweepKind, time.Minute, reconcile.RefundStaleReservations(a.DB, store.ReservationLifetime)); err != nil {
		return nil, err
	}
	return runner, nil
}
