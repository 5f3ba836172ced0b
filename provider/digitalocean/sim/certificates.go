package sim

import (
	"crypto"
	"crypto/rand"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/digitalocean/godo"
)

// FailingDomainSuffix makes a lets_encrypt certificate end in state "error" when one of its
// dns_names ends with it, so tests can provoke a failed issuance.
const FailingDomainSuffix = ".invalid"

// certRecord is a stored certificate; a managed one's state is derived from verifyAt.
type certRecord struct {
	seq      int
	c        godo.Certificate
	managed  bool
	verifyAt time.Time
	fails    bool
}

// certState is the state the API reports for r at now.
func (s *Server) certState(r *certRecord, now time.Time) string {
	switch {
	case !r.managed:
		return "verified"
	case now.Before(r.verifyAt):
		return "pending"
	case r.fails:
		return "error"
	default:
		return "verified"
	}
}

func (s *Server) certView(r *certRecord, now time.Time) godo.Certificate {
	v := r.c
	v.State = s.certState(r, now)
	return v
}

type certRoot struct {
	Certificate wireCertificate `json:"certificate"`
}

type certsRoot struct {
	Certificates []wireCertificate `json:"certificates"`
	Links        wireLinks         `json:"links"`
	Meta         wireMeta          `json:"meta"`
}

func (s *Server) routeCertificates() {
	s.route("POST /v2/certificates", s.createCertificate)
	s.route("GET /v2/certificates", s.listCertificates)
	s.route("GET /v2/certificates/{id}", s.getCertificate)
	s.route("DELETE /v2/certificates/{id}", s.deleteCertificate)
}

// createCertificate answers 201. A custom certificate is checked (PEM that parses, a key that
// matches the leaf) and verified at once; a lets_encrypt one is pending for a while.
func (s *Server) createCertificate(c *call) reply {
	var req godo.CertificateRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		return fail(errInvalid("name is required"))
	}
	for _, r := range c.acct.certificates {
		if r.c.Name == name {
			return fail(errInvalid("a certificate named %q already exists", name))
		}
	}
	rec := &certRecord{c: godo.Certificate{ID: newUUID(), Name: name, Created: stamp(c.now)}}
	switch req.Type {
	case "", "custom":
		if err := fillCustom(&rec.c, req); err != nil {
			return fail(err)
		}
		rec.c.Type = "custom"
	case "lets_encrypt":
		if err := fillManaged(rec, req, c.now, s.opts.CertificateVerifyDelay); err != nil {
			return fail(err)
		}
	default:
		return fail(errInvalid("type must be custom or lets_encrypt"))
	}
	rec.seq = c.acct.next()
	c.acct.certificates[rec.c.ID] = rec
	return ok(http.StatusCreated, certRoot{wireCertificateOf(s.certView(rec, c.now))})
}

// fillCustom parses the leaf, key and chain and takes the names and expiry from the leaf.
func fillCustom(out *godo.Certificate, req godo.CertificateRequest) *apiError {
	if req.PrivateKey == "" || req.LeafCertificate == "" {
		return errInvalid("private_key and leaf_certificate are required for custom certificates")
	}
	leaf, err := parseCertPEM(req.LeafCertificate)
	if err != nil || len(leaf) != 1 {
		return errInvalid("leaf_certificate must be one PEM encoded certificate")
	}
	if req.CertificateChain != "" {
		if _, err := parseCertPEM(req.CertificateChain); err != nil {
			return errInvalid("certificate_chain must be PEM encoded certificates")
		}
	}
	key, err := parsePrivateKeyPEM(req.PrivateKey)
	if err != nil {
		return errInvalid("private_key must be a PEM encoded RSA, ECDSA or Ed25519 key")
	}
	pub, isPub := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !isPub || !pub.Equal(leaf[0].PublicKey) {
		return errInvalid("private_key does not match leaf_certificate")
	}
	sum := sha1.Sum(leaf[0].Raw)
	out.SHA1Fingerprint = hex.EncodeToString(sum[:])
	out.NotAfter = stamp(leaf[0].NotAfter)
	out.DNSNames = slices.Clone(leaf[0].DNSNames)
	if len(out.DNSNames) == 0 && leaf[0].Subject.CommonName != "" {
		out.DNSNames = []string{leaf[0].Subject.CommonName}
	}
	return nil
}

// fillManaged validates the names of a lets_encrypt certificate and schedules its issuance.
func fillManaged(rec *certRecord, req godo.CertificateRequest, now time.Time, delay time.Duration) *apiError {
	if len(req.DNSNames) == 0 {
		return errInvalid("dns_names is required for lets_encrypt certificates")
	}
	for _, n := range req.DNSNames {
		if !hostname.MatchString(n) {
			return errInvalid("dns_names entry %q is not a valid host name", n)
		}
		if strings.HasSuffix(n, FailingDomainSuffix) {
			rec.fails = true
		}
	}
	var fp [20]byte
	_, _ = rand.Read(fp[:])
	rec.managed = true
	rec.verifyAt = now.Add(delay)
	rec.c.Type = "lets_encrypt"
	rec.c.DNSNames = slices.Clone(req.DNSNames)
	rec.c.NotAfter = stamp(now.Add(90 * 24 * time.Hour))
	rec.c.SHA1Fingerprint = hex.EncodeToString(fp[:])
	return nil
}

func parseCertPEM(s string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, errInvalid("unexpected PEM block %s", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errInvalid("no certificate")
	}
	return out, nil
}

func parsePrivateKeyPEM(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errInvalid("no PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if signer, isSigner := k.(crypto.Signer); isSigner {
			return signer, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// listCertificates pages through the certificates, filtered by name (ListByName).
func (s *Server) listCertificates(c *call) reply {
	name := c.r.URL.Query().Get("name")
	var all []wireCertificate
	for _, r := range sortedBySeq(c.acct.certificates, func(r *certRecord) int { return r.seq }) {
		if name == "" || r.c.Name == name {
			all = append(all, wireCertificateOf(s.certView(r, c.now)))
		}
	}
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := all[p.lo:p.hi]
	if page == nil {
		page = []wireCertificate{}
	}
	links, meta := wirePage(p)
	return ok(http.StatusOK, certsRoot{Certificates: page, Links: links, Meta: meta})
}

func (s *Server) getCertificate(c *call) reply {
	r := c.acct.certificates[c.r.PathValue("id")]
	if r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, certRoot{wireCertificateOf(s.certView(r, c.now))})
}

// deleteCertificate refuses (409) a certificate a load balancer still uses.
func (s *Server) deleteCertificate(c *call) reply {
	id := c.r.PathValue("id")
	if c.acct.certificates[id] == nil {
		return fail(errNotFound())
	}
	if lb := c.acct.lbUsingCert(id); lb != "" {
		return fail(errConflict("certificate %s is in use by load balancer %s", id, lb))
	}
	delete(c.acct.certificates, id)
	return ok(http.StatusNoContent, nil)
}

// lbUsingCert returns the id of a load balancer whose rules or domains name the certificate.
func (a *account) lbUsingCert(id string) string {
	for _, r := range a.loadBalancers {
		for _, f := range r.lb.ForwardingRules {
			if f.CertificateID == id {
				return r.lb.ID
			}
		}
		for _, d := range r.lb.Domains {
			if d.CertificateID == id {
				return r.lb.ID
			}
		}
	}
	return ""
}
