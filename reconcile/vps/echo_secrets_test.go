package vps_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// echoKey is shaped like a PEM private key; the provider never parses it.
const echoKey = "-----BEGIN PRIVATE KEY-----\n" +
	"MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDEchoedSecretKey\n" +
	"Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z2g=\n" +
	"-----END PRIVATE KEY-----\n"

// echoProvider lists no certificates and answers every other request 422 with an error message
// that quotes the request's headers and body, as a careless (or hostile) endpoint at a provider
// account's apiUrl might.
func echoProvider(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v2/certificates" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"certificates":[],"links":{},"meta":{"total":0}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var echo strings.Builder
		fmt.Fprintf(&echo, "%s %s ", r.Method, r.URL.String())
		for k, v := range r.Header {
			fmt.Fprintf(&echo, "%s: %s; ", k, strings.Join(v, ","))
		}
		echo.Write(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": "unprocessable_entity", "message": "refused: " + echo.String()})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Text derived from a provider's answer (lastError, events) never carries a secret of the
// request that caused it: not the certificate's private key from the body, not the account's
// token from the Authorization header, however the endpoint echoes them.
func TestProviderEchoNeverLeaksSecrets(t *testing.T) {
	e := newEnv(t, "echo", 10)
	const accountToken = "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
	acct, err := e.s.App.Tenancy.CreateProviderAccount(e.s.AdminCtx, &v1.CreateProviderAccountRequest{
		TenantId: e.tn.ID, Kind: "digitalocean", Name: "echoing", Token: accountToken, ApiUrl: echoProvider(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := e.s.App.Resources.CreateCertificate(e.tn.Ctx, &v1.CreateCertificateRequest{
		TenantId: e.tn.ID, AccountId: acct.GetId(), Name: "leaky",
		Source: &v1.CreateCertificateRequest_Custom{Custom: &v1.CustomCertificate{
			PrivateKey: echoKey, LeafCertificate: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var lastError string
	eventually(t, "the refused create recorded", func() (bool, string) {
		row, err := store.GetCertificate(e.ctx, e.s.App.DB.Q(), cert.GetId())
		lastError = row.LastError
		return err == nil && row.LastError != "", fmt.Sprintf("%+v %v", row, err)
	})
	t.Logf("lastError: %s", lastError)
	if !strings.Contains(lastError, "422") {
		t.Errorf("lastError %q lost the provider's answer", lastError)
	}
	got, err := e.s.App.Resources.GetCertificate(e.tn.Ctx, &v1.GetCertificateRequest{TenantId: e.tn.ID, CertificateId: cert.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := json.Marshal(got)
	evs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), e.tn.ID, 0, 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	evText, _ := json.Marshal(evs)
	secrets := map[string]string{
		"private key line":        "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z2g=",
		"private key first line":  "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDEchoedSecretKey",
		"account token":           accountToken,
		"account token (partial)": accountToken[:24],
	}
	for what, secret := range secrets {
		for where, text := range map[string]string{"lastError": lastError, "certificates/get": string(seen), "events": string(evText)} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the %s: %s", where, what, text)
			}
		}
	}
}
