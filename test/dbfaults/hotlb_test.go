package dbfaults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/app/apptest"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/store"
	"better-compute.dev/compute/store/storetest"
)

// hotSeconds is how long TestHotLoadBalancerKeepsTheLockOrder drives its load
// (BC_HOT_SECONDS overrides it).
const hotSeconds = 60

// written is one update of the hot load balancer: the health check path it sets (unique) and
// when the call was sent and answered.
type written struct {
	path       string
	start, end time.Time
	acked      bool
	// refused: answered with an error that promises nothing was written (anything but a
	// commit of unknown outcome or a call cut short).
	refused bool
	code    string
}

// seen is one get of the hot load balancer: when it was sent and the path it showed.
type seen struct {
	start time.Time
	path  string
}

// TestHotLoadBalancerKeepsTheLockOrder runs, on a PostgreSQL server of its own, three replicas
// with their reconcilers on one database and, for a minute, 12 clients updating (40%) and
// getting (60%) one load balancer on any replica, while another client creates (twice at once,
// one idempotency key), updates and deletes other load balancers of the tenant; twice, every
// backend is terminated, as a failover would (updates in flight then fail). It asserts the
// lock order's promises (store/lockorder.go): PostgreSQL broke no deadlock, transactions ran
// again at most 0.05 times per update, every get shows the newest acknowledged update or a
// later one and never one answered as refused, every replica ends on the same last update, and
// twin creates never make two load balancers.
func TestHotLoadBalancerKeepsTheLockOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own PostgreSQL and runs for a minute")
	}
	seconds := hotSeconds
	if v, err := strconv.Atoi(os.Getenv("BC_HOT_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	replicas, srv := apptest.StartBusyReplicas(t, 3)
	tn := replicas[0].NewTenant(t, "hot", "editor")
	hot := replicas[0].ReadyLoadBalancer(t, tn, "hot")
	pick := func() *apptest.Stack { return replicas[rand.N(len(replicas))] }

	deadlocksBefore := storetest.Deadlocks(t, replicas[0].App.DB)
	rerunsBefore := store.TransactionRetries()
	var mu sync.Mutex
	var writes []written
	var gets []seen
	stop := time.Now().Add(time.Duration(seconds) * time.Second)
	var wg sync.WaitGroup
	for c := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(stop); n++ {
				time.Sleep(time.Duration(20+rand.N(40)) * time.Millisecond)
				ctx, cancel := context.WithTimeout(tn.Ctx, 10*time.Second)
				if rand.N(10) < 4 {
					w := written{path: fmt.Sprintf("/c%d-%d", c, n), start: time.Now()}
					_, err := pick().App.LoadBalancers.UpdateLoadBalancer(ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: hot.GetId(),
						HealthCheck: &v1.HealthCheck{Protocol: "http", Port: 8080, Path: w.path}})
					w.end, w.acked = time.Now(), err == nil
					if err != nil {
						w.code = string(apierr.From(err).Code)
						w.refused = !errors.Is(err, store.ErrCommitUnknown) && !errors.Is(err, context.DeadlineExceeded)
					}
					mu.Lock()
					writes = append(writes, w)
					mu.Unlock()
				} else {
					g := seen{start: time.Now()}
					got, err := pick().App.LoadBalancers.GetLoadBalancer(ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: hot.GetId()})
					if err != nil && apierr.From(err).Code != errcode.Unavailable {
						t.Errorf("get: %v", err)
					} else if err == nil {
						g.path = got.GetHealthCheck().GetPath()
						mu.Lock()
						gets = append(gets, g)
						mu.Unlock()
					}
				}
				cancel()
			}
		}()
	}
	// Twice, every connection to the database is ended, as a failover would: updates in flight
	// are answered UNAVAILABLE, "nothing was changed" or outcome unknown, and the first must
	// never show.
	terminated := make(chan int, 1)
	go func() {
		n := 0
		for _, at := range []time.Duration{time.Duration(seconds) * time.Second / 3, time.Duration(seconds) * time.Second * 2 / 3} {
			time.Sleep(time.Until(stop.Add(-time.Duration(seconds) * time.Second).Add(at)))
			if k, err := srv.TerminateBackends(context.Background()); err == nil {
				n += k
			}
		}
		terminated <- n
	}()
	churned := churn(t, tn, replicas, stop)
	wg.Wait()
	backends := <-terminated

	rerunsDuring := store.TransactionRetries() - rerunsBefore
	deadlocks := storetest.Deadlocks(t, replicas[0].App.DB) - deadlocksBefore
	acked, refused := 0, 0
	for _, w := range writes {
		if w.acked {
			acked++
		}
		if w.refused {
			refused++
		}
	}
	t.Logf("%d updates (%d acknowledged, %d refused), %d gets, %d churned load balancers in %d s, %d backends terminated: deadlocks %d, reruns %d (%.4f per update)",
		len(writes), acked, refused, len(gets), churned, seconds, backends, deadlocks, rerunsDuring, float64(rerunsDuring)/float64(max(len(writes), 1)))
	if deadlocks != 0 {
		t.Errorf("PostgreSQL broke %d deadlocks", deadlocks)
	}
	if acked == 0 {
		t.Fatal("no update was acknowledged")
	}
	if per := float64(rerunsDuring) / float64(len(writes)); per > 0.05 {
		t.Errorf("%.3f transactions rerun per update, want at most 0.05", per)
	}
	checkReads(t, writes, gets)
	// Every replica ends on one value: an update that no acknowledged update wholly followed.
	var last string
	for i, r := range replicas {
		got, err := r.App.LoadBalancers.GetLoadBalancer(tn.Ctx, &v1.GetLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: hot.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && got.GetHealthCheck().GetPath() != last {
			t.Errorf("replica %d shows %q, replica 1 %q", i+1, got.GetHealthCheck().GetPath(), last)
		}
		last = got.GetHealthCheck().GetPath()
	}
	checkReads(t, writes, []seen{{start: time.Now(), path: last}})
}

// checkReads fails the test for a get that showed an update older than one acknowledged
// before the get was sent (wholly before it: answered before that one was sent), or an update
// answered as refused. The load balancer's first value (no health check) is older than all.
func checkReads(t *testing.T, writes []written, gets []seen) {
	t.Helper()
	byPath := map[string]written{"": {acked: true}}
	for _, w := range writes {
		byPath[w.path] = w
	}
	for _, g := range gets {
		v, ok := byPath[g.path]
		switch {
		case !ok:
			t.Errorf("a get showed %q, which no update wrote", g.path)
			continue
		case v.refused:
			t.Errorf("a get showed %q, whose update was answered %s (nothing written)", g.path, v.code)
			continue
		}
		for _, u := range writes {
			if u.acked && u.end.Before(g.start) && v.end.Before(u.start) {
				t.Errorf("a get sent %v after update %q was acknowledged showed %q, acknowledged before %q was sent",
					g.start.Sub(u.end), u.path, g.path, u.path)
				break
			}
		}
	}
}

// churn, until stop, creates a load balancer of the tenant through two replicas at once with one
// idempotency key (both must answer the same one), updates it, and deletes it; the reconcilers
// delete it at the provider and give the quota unit back. It returns how many it made.
func churn(t *testing.T, tn apptest.Tenant, replicas []*apptest.Stack, stop time.Time) int {
	t.Helper()
	yes := true
	made := 0
	for k := 0; time.Now().Before(stop); k++ {
		name := fmt.Sprintf("churn-%d", k)
		req := &v1.CreateLoadBalancerRequest{TenantId: tn.ID, PoolId: tn.PoolID, Name: name, Region: "nyc3", IdempotencyKey: name,
			Targets:    &v1.LoadBalancerTargets{Pool: &yes},
			Forwarding: []*v1.ForwardingRule{{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 8080}}}
		var twins [2]*v1.LoadBalancer
		var errs [2]error
		var wg sync.WaitGroup
		for i := range twins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				twins[i], errs[i] = replicas[(k+i)%len(replicas)].App.LoadBalancers.CreateLoadBalancer(tn.Ctx, req)
			}()
		}
		wg.Wait()
		// A twin may be refused for want of quota while the other is made: it read the quota full
		// before a deleted one's unit came back, and the other after (store.AwaitIdempotencyTwin
		// makes it replay a twin already writing). Or a twin may meet a terminated backend.
		var lb *v1.LoadBalancer
		for i, err := range errs {
			switch {
			case err == nil:
				if lb != nil && lb.GetId() != twins[i].GetId() {
					t.Errorf("twin creates of %s made two load balancers: %s and %s", name, lb.GetId(), twins[i].GetId())
				}
				lb = twins[i]
			case apierr.From(err).Code != errcode.QuotaExceeded && apierr.From(err).Code != errcode.Unavailable:
				t.Errorf("twin create of %s: %v", name, err)
			}
		}
		if lb == nil {
			time.Sleep(200 * time.Millisecond) // deleted ones still hold their units
			continue
		}
		made++
		svc := replicas[k%len(replicas)].App.Services
		if _, err := svc.LoadBalancers.UpdateLoadBalancer(tn.Ctx, &v1.UpdateLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId(),
			RedirectHttpToHttps: &yes}); err != nil && apierr.From(err).Code != errcode.InvalidState && !unavailable(err) {
			t.Errorf("update %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := svc.LoadBalancers.DeleteLoadBalancer(tn.Ctx, &v1.DeleteLoadBalancerRequest{TenantId: tn.ID, LoadBalancerId: lb.GetId()}); err != nil && !unavailable(err) {
			t.Errorf("delete %s: %v", name, err)
		}
	}
	return made
}

// unavailable: a call answered UNAVAILABLE (a terminated backend met it).
func unavailable(err error) bool {
	return apierr.From(err).Code == errcode.Unavailable
}
