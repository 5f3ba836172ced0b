package app

import "context"

// runReconcilers runs this replica's share of the reconcile work until ctx ends. The
// vps.provider-resources reconciler is wired here once it exists.
func (a *App) runReconcilers(ctx context.Context) {
	<-ctx.Done()
}
