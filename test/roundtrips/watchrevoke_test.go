package roundtrips

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	"better-compute.dev/compute/store/storetest"
)

// openWatch starts a WatchEvents stream on s with token; its end (the error) arrives on the channel.
func openWatch(t *testing.T, s *apptest.Stack, token, tenantID string) <-chan error {
	t.Helper()
	c := computev1connect.NewEventServiceClient(http.DefaultClient, s.App.URL)
	req := connect.NewRequest(&v1.WatchEventsRequest{TenantId: tenantID})
	req.Header().Set("Authorization", "Bearer "+token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	stream, err := c.WatchEvents(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		for stream.Receive() {
		}
		ended <- stream.Err()
	}()
	return ended
}

// TestRevocationEndsOpenWatchesOnEveryReplica: a watch open on each of two replicas ends with
// unauthenticated within 2 s of its token's revocation through one of them, and a watch whose
// principal loses its role ends with permission_denied within 2 s.
func TestRevocationEndsOpenWatchesOnEveryReplica(t *testing.T) {
	schema := storetest.NewSchema(t)
	one := startReplica(t, schema, "postgres", nil)
	two := startReplica(t, schema, "postgres", nil)
	tn := one.NewTenant(t, "watchers", "editor")
	tok, secret, err := one.App.Tenancy.CreateToken(one.AdminCtx, &v1.CreateTokenRequest{TenantId: tn.ID, PrincipalId: tn.PrincipalID})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ended <-chan error, since time.Time, want connect.Code) {
		t.Helper()
		select {
		case err := <-ended:
			t.Logf("%s ended %v after the revocation: %v", what, time.Since(since), err)
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != want {
				t.Errorf("%s ended with %v, want %v", what, err, want)
			}
			if time.Since(since) > 2*time.Second {
				t.Errorf("%s ended %v after the revocation; the bound is 2s", what, time.Since(since))
			}
		case <-time.After(3 * time.Second):
			t.Errorf("%s still open 3s after the revocation", what)
		}
	}
	byToken := []<-chan error{openWatch(t, one, secret, tn.ID), openWatch(t, two, secret, tn.ID)}
	time.Sleep(300 * time.Millisecond) // both streams established
	if _, err := one.App.Tenancy.RevokeToken(one.AdminCtx, &v1.RevokeTokenRequest{TenantId: tn.ID, TokenId: tok.GetId()}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	wait("the watch on the revoking replica", byToken[0], revoked, connect.CodeUnauthenticated)
	wait("the watch on the other replica", byToken[1], revoked, connect.CodeUnauthenticated)

	byRole := []<-chan error{openWatch(t, one, tn.Token, tn.ID), openWatch(t, two, tn.Token, tn.ID)}
	time.Sleep(300 * time.Millisecond)
	if err := one.App.Tenancy.RevokeRole(one.AdminCtx, &v1.GrantRoleRequest{TenantId: tn.ID, PrincipalId: tn.PrincipalID, Role: "editor"}); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	wait("the watch on the replica that removed the role", byRole[0], removed, connect.CodePermissionDenied)
	wait("the watch on the other replica", byRole[1], removed, connect.CodePermissionDenied)
}
