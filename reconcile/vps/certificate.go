package vps

import (
	"context"
	"errors"
	"fmt"

	"better-compute.dev/compute/provider"
	"better-compute.dev/compute/reconcile"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/store"
)

// certPass uploads a custom certificate (its key unsealed only in memory) or asks for a
// managed one, as "bc-<id>", and follows it until the provider has verified it: then it is ready
// and the load balancers that name it are queued. A certificate being deleted is deleted at the
// provider. Certificate names are unique in an account: whatever carries the name is ours.
type certPass struct {
	managed.Base
	r   *Reconciler
	f   *managed.Fence
	row store.Certificate
	p   provider.Provider

	spec provider.CertificateSpec
	c    *provider.Certificate
}

var _ managed.Resource = (*certPass)(nil)

func (r *Reconciler) loadCertificate(ctx context.Context, f *managed.Fence) (managed.Resource, error) {
	row, err := store.GetCertificate(ctx, r.opts.DB.Q(), f.Lease.ResourceID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (row.State == "deleted" || row.State == "error")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("vps: %w", err)
	}
	return &certPass{r: r, f: f, row: row}, nil
}

func (c *certPass) ID() string     { return c.row.ID }
func (c *certPass) Deleting() bool { return c.row.State == "deleting" }

func (c *certPass) connect(ctx context.Context) (err error) {
	c.p, err = c.r.connect(ctx, c.row.AccountID)
	return err
}

func (c *certPass) Observe(ctx context.Context) (managed.Observation, error) {
	if err := c.connect(ctx); err != nil {
		return managed.Observation{}, err
	}
	if c.row.State == "ready" {
		return managed.Finish(reconcile.Result{}), nil
	}
	return managed.Observation{}, nil
}

func (c *certPass) Adopt(ctx context.Context, name string) (managed.Observation, error) {
	found, err := c.p.Certificates().FindByName(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		return managed.Observation{}, nil
	}
	if err != nil {
		return managed.Observation{}, err
	}
	c.c = found
	return managed.Found(true), nil
}

// Prepare builds the request; a custom certificate's key is unsealed with the certificate id
// as associated data and lives only in the request.
func (c *certPass) Prepare(_ context.Context, name string) (managed.Observation, error) {
	c.spec = provider.CertificateSpec{Name: name}
	if c.row.Kind == "managed" {
		c.spec.Managed, c.spec.DNSNames = true, c.row.DNSNames
		return managed.Observation{}, nil
	}
	key, err := c.r.opts.Keyring.OpenSecret(string(c.row.PrivateKeySealed), []byte(c.row.ID))
	if err != nil {
		return managed.Observation{}, fmt.Errorf("vps: certificate %s: open private key: %w", c.row.ID, err)
	}
	c.spec.PrivateKeyPEM, c.spec.LeafCertPEM, c.spec.CertificateChain = key.Reveal(), c.row.LeafCertificate, c.row.CertificateChain
	return managed.Observation{}, nil
}

func (c *certPass) Create(ctx context.Context, _ string) (err error) {
	c.c, err = c.p.Certificates().Create(ctx, c.spec)
	return err
}

// Record follows the provider's verification: verified is ready, a failed issue is the
// certificate's error, anything else is polled.
func (c *certPass) Record(ctx context.Context) (reconcile.Result, error) {
	switch c.c.State {
	case provider.CertificateVerified:
		return reconcile.Result{}, c.state(ctx, "ready", c.c.ID, "")
	case provider.CertificateError:
		return reconcile.Result{}, c.state(ctx, "error", c.c.ID, "the provider could not issue certificate "+c.c.ID)
	}
	if c.c.ID == c.row.ProviderID {
		return reconcile.Result{RequeueAfter: c.r.opts.ProviderPoll}, nil
	}
	return requeueAfter(c.state(ctx, c.row.State, c.c.ID, ""), c.r.opts.ProviderPoll)
}

// Delete: a managed certificate's id changes on renewal, so the name finds the current one.
func (c *certPass) Delete(ctx context.Context, name string) error {
	if err := c.connect(ctx); err != nil {
		return err
	}
	certs := c.p.Certificates()
	return managed.DeleteByName(ctx, c.row.ProviderID, name, certs.Delete,
		managed.FindID(certs.FindByName, func(c *provider.Certificate) string { return c.ID }))
}

func (c *certPass) Deleted(ctx context.Context) error { return c.state(ctx, "deleted", "", "") }

// Errored records a refusal that will not heal as the certificate's error (not while deleting).
func (c *certPass) Errored(ctx context.Context, cause error) (reconcile.Result, error) {
	if c.Deleting() {
		return reconcile.Result{}, cause
	}
	return reconcile.Result{}, c.state(ctx, "error", "", cause.Error())
}

func (c *certPass) state(ctx context.Context, state, providerID, lastError string) error {
	return write(ctx, c.f, func(w *writer) error { return w.certificateState(c.row, state, providerID, lastError) })
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
