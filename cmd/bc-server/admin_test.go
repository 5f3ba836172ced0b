package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/app"
	"better-compute.dev/compute/core"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

type result struct {
	code        int
	out, errOut string
}

func runCmd(env map[string]string, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, lookup(env), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

var (
	tokenLine   = regexp.MustCompile(`(?m)^token: (bct_\S+)$`)
	tokenIDLine = regexp.MustCompile(`(?m)^token-id: (\S+)$`)
)

func printed(t *testing.T, r result) (id, secret string) {
	t.Helper()
	s, i := tokenLine.FindStringSubmatch(r.out), tokenIDLine.FindStringSubmatch(r.out)
	if s == nil || i == nil {
		t.Fatalf("no token printed: exit %d stdout %q stderr %q", r.code, r.out, r.errOut)
	}
	if strings.Contains(r.errOut, s[1]) {
		t.Fatalf("the secret reached stderr: %q", r.errOut)
	}
	return i[1], s[1]
}

func live(t *testing.T, db *store.DB, secret string) bool {
	t.Helper()
	_, _, err := store.AuthenticateToken(context.Background(), db.Q(), core.HashSecret(secret))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestBootstrapAdminConcurrent: eight hosts bootstrapping one empty database at once (each also
// migrating it) make exactly one platform admin and one token; the others refuse, writing nothing.
// The token printed works against a replica as a platform admin.
func TestBootstrapAdminConcurrent(t *testing.T) {
	schema := storetest.NewSchema(t, storetest.Unmigrated())
	env := map[string]string{"BC_DATABASE_URL": schema.URL}
	const hosts = 8
	results := make([]result, hosts)
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = runCmd(env, "bootstrap-admin", "--name", "ops") }()
	}
	wg.Wait()
	var won []result
	for _, r := range results {
		switch r.code {
		case 0:
			won = append(won, r)
		case 1:
			if !strings.Contains(r.errOut, "platform admin exists") {
				t.Errorf("a losing run says %q", r.errOut)
			}
		default:
			t.Errorf("exit %d: %s", r.code, r.errOut)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d runs made an admin, want 1: %+v", len(won), results)
	}
	_, secret := printed(t, won[0])
	ctx := context.Background()
	var admins, principals, tokens int
	if err := schema.DB.Q().QueryRow(ctx, `SELECT count(*) FILTER (WHERE platform_admin), count(*) FROM principals`).Scan(&admins, &principals); err != nil {
		t.Fatal(err)
	}
	if err := schema.DB.Q().QueryRow(ctx, `SELECT count(*) FROM tokens`).Scan(&tokens); err != nil {
		t.Fatal(err)
	}
	if admins != 1 || principals != 1 || tokens != 1 {
		t.Errorf("admins %d principals %d tokens %d, want 1 1 1", admins, principals, tokens)
	}

	// The token is a platform admin's on a replica of that database: it creates a tenant.
	key, err := seal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(ctx, app.Config{Listen: "127.0.0.1:0", DatabaseURL: schema.URL, SealKey: key.Encode(),
		OpenFGADatastore: "memory", Replica: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/api/compute/tenants/create", strings.NewReader(`{"tenantId":"acme","displayName":"Acme"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("tenants/create with the bootstrap token: %d", resp.StatusCode)
	}

	// A later run refuses too.
	if r := runCmd(env, "bootstrap-admin"); r.code != 1 || strings.Contains(r.out, "token:") {
		t.Errorf("second bootstrap: exit %d stdout %q", r.code, r.out)
	}
}

// TestBootstrapAdminTokens: --additional adds a token to the one admin, --rotate replaces every
// token of it, revoke-token revokes one; an unknown token id is an error.
func TestBootstrapAdminTokens(t *testing.T) {
	schema := storetest.NewSchema(t)
	env := map[string]string{"BC_DATABASE_URL": schema.URL}
	if r := runCmd(env, "bootstrap-admin", "--additional"); r.code != 1 || !strings.Contains(r.errOut, "no platform admin") {
		t.Errorf("--additional before any admin: exit %d stderr %q", r.code, r.errOut)
	}
	_, first := printed(t, runCmd(env, "bootstrap-admin"))
	_, second := printed(t, runCmd(env, "bootstrap-admin", "--additional"))
	if !live(t, schema.DB, first) || !live(t, schema.DB, second) {
		t.Fatal("--additional: both tokens should be live")
	}
	rot := runCmd(env, "bootstrap-admin", "--rotate")
	rotID, rotated := printed(t, rot)
	if live(t, schema.DB, first) || live(t, schema.DB, second) || !live(t, schema.DB, rotated) {
		t.Errorf("--rotate: old tokens live %v %v, new live %v", live(t, schema.DB, first), live(t, schema.DB, second), live(t, schema.DB, rotated))
	}
	if n := strings.Count(rot.out, "revoked: "); n != 2 {
		t.Errorf("--rotate listed %d revoked tokens, want 2: %q", n, rot.out)
	}
	var admins int
	if err := schema.DB.Q().QueryRow(context.Background(), `SELECT count(*) FROM principals WHERE platform_admin`).Scan(&admins); err != nil {
		t.Fatal(err)
	}
	if admins != 1 {
		t.Errorf("%d platform admins, want 1", admins)
	}
	if r := runCmd(env, "revoke-token", rotID); r.code != 0 || live(t, schema.DB, rotated) {
		t.Errorf("revoke-token: exit %d stderr %q, still live %v", r.code, r.errOut, live(t, schema.DB, rotated))
	}
	if r := runCmd(env, "revoke-token", "tok_missing"); r.code != 1 || !strings.Contains(r.errOut, "not found") {
		t.Errorf("revoke-token of a missing id: exit %d stderr %q", r.code, r.errOut)
	}
	if r := runCmd(env, "bootstrap-admin", "--additional", "--rotate"); r.code != 2 {
		t.Errorf("--additional --rotate: exit %d", r.code)
	}
	if r := runCmd(nil, "bootstrap-admin"); r.code != 1 || !strings.Contains(r.errOut, "BC_DATABASE_URL") {
		t.Errorf("without BC_DATABASE_URL: exit %d stderr %q", r.code, r.errOut)
	}
}
