package vps

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/store"
)

// reconcileCertificate uploads a custom certificate (its key unsealed only in memory) or asks
// for a managed one, as "bc-<id>", and follows it until the provider has verified it: then it
// is ready and the load balancers that name it are queued. A certificate being deleted is
// deleted at the provider.
func (r *Reconciler) reconcileCertificate(ctx context.Context, lease store.Lease) (reconcile.Result, error) {
	row, err := store.GetCertificate(ctx, r.opts.DB.Q(), lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (row.State == "deleted" || row.State == "error")) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("vps: %w", err)
	}
	p, err := r.providerFor(ctx, row.AccountID)
	if err != nil {
		return r.certificateFailed(ctx, lease, row, err)
	}
	certs := p.Certificates()
	name := ProviderName(row.ID)
	if row.State == "deleting" {
		// A managed certificate's id changes on renewal: the name finds the current one.
		err := deleteByName(ctx, row.ProviderID, name, certs.Delete,
			findID(certs.FindByName, func(c *provider.Certificate) string { return c.ID }))
		if err != nil {
			return r.certificateFailed(ctx, lease, row, err)
		}
		return settle(r.write(ctx, lease, func(w *writer) error { return w.certificateState(row, "deleted", "", "") }))
	}
	if row.State == "ready" {
		return reconcile.Result{}, nil
	}
	// Certificate names are unique in an account: whatever carries the name is ours.
	c, err := certs.FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		spec, serr := r.certificateSpec(row)
		if serr != nil {
			return r.certificateFailed(ctx, lease, row, serr)
		}
		err = r.fencedCreate(ctx, lease, nil, func(ctx context.Context) error {
			c, err = certs.Create(ctx, spec)
			return err
		})
	}
	if err != nil {
		return r.certificateFailed(ctx, lease, row, err)
	}
	switch c.State {
	case provider.CertificateVerified:
		return settle(r.write(ctx, lease, func(w *writer) error { return w.certificateState(row, "ready", c.ID, "") }))
	case provider.CertificateError:
		msg := "the provider could not issue certificate " + c.ID
		return settle(r.write(ctx, lease, func(w *writer) error { return w.certificateState(row, "error", c.ID, msg) }))
	}
	if c.ID == row.ProviderID {
		return reconcile.Result{RequeueAfter: r.opts.ProviderPoll}, nil
	}
	return requeueAfter(r.write(ctx, lease, func(w *writer) error { return w.certificateState(row, row.State, c.ID, "") }),
		r.opts.ProviderPoll)
}

// certificateSpec is the provider request; a custom certificate's key is unsealed with the
// certificate id as associated data and lives only in the returned value.
func (r *Reconciler) certificateSpec(row store.Certificate) (provider.CertificateSpec, error) {
	spec := provider.CertificateSpec{Name: ProviderName(row.ID)}
	if row.Kind == "managed" {
		spec.Managed, spec.DNSNames = true, row.DNSNames
		return spec, nil
	}
	key, err := r.opts.Keyring.OpenSecret(string(row.PrivateKeySealed), []byte(row.ID))
	if err != nil {
		return spec, fmt.Errorf("vps: certificate %s: open private key: %w", row.ID, err)
	}
	spec.PrivateKeyPEM, spec.LeafCertPEM, spec.CertificateChain = key.Reveal(), row.LeafCertificate, row.CertificateChain
	return spec, nil
}

// certificateFailed records a refusal that will not heal as the certificate's error.
func (r *Reconciler) certificateFailed(ctx context.Context, lease store.Lease, row store.Certificate, cause error) (reconcile.Result, error) {
	if !terminal(cause) || reconcile.LeaseLost(ctx) || row.State == "deleting" {
		return reconcile.Result{}, cause
	}
	return settle(r.write(ctx, lease, func(w *writer) error { return w.certificateState(row, "error", "", cause.Error()) }))
}

// certificateState moves the certificate from the state the pass read to state; a ready one
// queues the load balancers that wait for it.
func (w *writer) certificateState(read store.Certificate, state, providerID, lastError string) error {
	cur, err := store.GetCertificateForUpdate(w.ctx, w.tx, read.ID)
	if err != nil {
		return err
	}
	if cur.State != read.State {
		if providerID == "" || cur.ProviderID == providerID {
			return errRowChanged
		}
		state = cur.State // keep the request's state, but remember what the provider made
	}
	if err := store.SetCertificateState(w.ctx, w.tx, cur.ID, state, providerID, lastError); err != nil {
		return err
	}
	if state != "ready" {
		return nil
	}
	waiting, err := store.LoadBalancersNamingCertificate(w.ctx, w.tx, cur.ID)
	if err != nil {
		return err
	}
	return w.enqueueAll(waiting)
}
