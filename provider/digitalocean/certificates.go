package digitalocean

import (
	"context"
	"net/url"

	"github.com/digitalocean/godo"

	"better-compute.dev/compute/provider"
)

// certificates is provider.Certificates on /v2/certificates.
type certificates struct{ p *client }

func fromCert(c *godo.Certificate) *provider.Certificate {
	out := &provider.Certificate{ID: c.ID, Name: c.Name, State: provider.CertificatePending}
	switch c.State {
	case "verified":
		out.State = provider.CertificateVerified
	case "error":
		out.State = provider.CertificateError
	}
	return out
}

func (c certificates) Get(ctx context.Context, id string) (*provider.Certificate, error) {
	const op = "get certificate"
	if !validID(id) {
		return nil, c.p.invalid(op, "malformed id %q", id)
	}
	cert, _, err := c.p.godo.Certificates.Get(ctx, id)
	if err != nil {
		return nil, c.p.fail(op+" "+id, err)
	}
	return fromCert(cert), nil
}

// FindByName uses the name filter and compares exactly. A managed certificate's id changes
// when it is renewed, so callers resolve it by name when they need it.
func (c certificates) FindByName(ctx context.Context, name string) (*provider.Certificate, error) {
	const op = "find certificate by name"
	if name == "" {
		return nil, c.p.invalid(op, "empty name")
	}
	cert, found, err := findPaged(ctx, c.p.pageSize,
		func(ctx context.Context, opt *godo.ListOptions) ([]godo.Certificate, *godo.Response, error) {
			// godo puts the name into the URL as it is; escaping keeps any name one parameter.
			return c.p.godo.Certificates.ListByName(ctx, url.QueryEscape(name), opt)
		},
		func(cert godo.Certificate) bool { return cert.Name == name })
	if err != nil {
		return nil, c.p.fail(op, err)
	}
	if !found {
		return nil, c.p.wrap("digitalocean: "+op+": no certificate named "+name+": "+provider.ErrNotFound.Error(), provider.ErrNotFound)
	}
	return fromCert(&cert), nil
}

// Create makes a lets_encrypt certificate for a managed spec, a custom one from PEM otherwise.
// The key is only ever in the request body, never in an error.
func (c certificates) Create(ctx context.Context, spec provider.CertificateSpec) (*provider.Certificate, error) {
	const op = "create certificate"
	req := &godo.CertificateRequest{Name: spec.Name}
	if spec.Managed {
		req.Type = "lets_encrypt"
		req.DNSNames = spec.DNSNames
	} else {
		req.Type = "custom"
		req.PrivateKey = spec.PrivateKeyPEM
		req.LeafCertificate = spec.LeafCertPEM
		req.CertificateChain = spec.CertificateChain
	}
	cert, _, err := c.p.godo.Certificates.Create(ctx, req)
	if err != nil {
		return nil, c.p.fail(op+" "+spec.Name, err, spec.PrivateKeyPEM)
	}
	return fromCert(cert), nil
}

// Delete is idempotent. A certificate a load balancer still uses answers provider.ErrBusy.
func (c certificates) Delete(ctx context.Context, id string) error {
	const op = "delete certificate"
	if !validID(id) {
		return c.p.invalid(op, "malformed id %q", id)
	}
	_, err := c.p.godo.Certificates.Delete(ctx, id)
	return ignoreNotFound(c.p.fail(op+" "+id, err))
}
