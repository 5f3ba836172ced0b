package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// ErrLoadBalancerFailed is what WaitLoadBalancer returns (wrapped) when the load balancer turns
// error while the caller waits for another state.
var ErrLoadBalancerFailed = errors.New("load balancer turned error")

// WaitOptions tunes WaitLoadBalancer.
type WaitOptions struct {
	// Until lists the states that end the wait; empty means ready, error and deleted.
	Until []LoadBalancerState
	// Timeout bounds the wait (beside ctx); 0 means only ctx does.
	Timeout time.Duration
	// PollInterval is how often the load balancer is read once the event stream has failed (the
	// poll fallback); 0 means 2 s.
	PollInterval time.Duration
	// IdleTimeout: an event stream silent for this long (no event, no heartbeat) is given up for
	// polling; 0 means 45 s.
	IdleTimeout time.Duration
}

// WaitLoadBalancer waits until the load balancer id is in one of o.Until's states and returns it.
// It watches the load balancer's events (WatchEvents filtered to it) and reads it again on each;
// when the stream cannot be opened or fails, it polls GetLoadBalancer instead. A load balancer
// that is gone (NOT_FOUND) counts as deleted. It ends:
//   - in a state of o.Until: that load balancer, nil;
//   - error while o.Until lacks it: the load balancer and an error wrapping ErrLoadBalancerFailed;
//   - when o.Timeout passes or ctx ends: the last load balancer read and an error wrapping the
//     context's (errors.Is(err, context.DeadlineExceeded));
//   - on a call's error other than UNAVAILABLE (which it rides out): that error.
func WaitLoadBalancer(ctx context.Context, cl *Client, tenantID, id string, o WaitOptions) (*v1.LoadBalancer, error) {
	until := o.Until
	if len(until) == 0 {
		until = []LoadBalancerState{LoadBalancerReady, LoadBalancerError, LoadBalancerDeleted}
	}
	poll := o.PollInterval
	if poll <= 0 {
		poll = 2 * time.Second
	}
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = 45 * time.Second
	}
	wctx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	sctx, stopStream := context.WithCancel(wctx)
	defer stopStream()

	// The stream runs beside the reads: changed says an event about the load balancer came (one
	// pending signal stands for any number), failed that the stream is over.
	changed := make(chan struct{}, 1)
	failed := make(chan error, 1)
	go func() {
		timer := time.AfterFunc(idle, stopStream)
		defer timer.Stop()
		stream, err := cl.Events.WatchEvents(sctx, connect.NewRequest(&v1.WatchEventsRequest{TenantId: tenantID, ResourceId: id}))
		if err != nil {
			failed <- err
			return
		}
		defer stream.Close()
		for stream.Receive() {
			timer.Reset(idle)
			if stream.Msg().GetEvent() != nil {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}
		failed <- stream.Err()
	}()

	var last *v1.LoadBalancer
	// look reads the load balancer: done when the wait is over (with the answer).
	look := func() (done bool, err error) {
		resp, err := cl.LoadBalancers.GetLoadBalancer(wctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: tenantID, LoadBalancerId: id}))
		pe, isPlatform := AsError(err)
		switch {
		case err == nil:
			last = resp.Msg.GetLoadBalancer()
		case isPlatform && pe.Code == NotFound && last != nil:
			// Gone after we saw it: deleted (a deleted row past retention is not found).
			last = proto.Clone(last).(*v1.LoadBalancer)
			last.State = string(LoadBalancerDeleted)
		case isPlatform && pe.Code == Unavailable:
			return false, nil // look again later
		case wctx.Err() != nil:
			return false, nil // the deadline speaks below
		default:
			return true, err
		}
		st := LoadBalancerStateOf(last)
		if slices.Contains(until, st) {
			return true, nil
		}
		if st == LoadBalancerError {
			return true, fmt.Errorf("sdk: load balancer %s: %w: %s", id, ErrLoadBalancerFailed, last.GetLastError())
		}
		if st == LoadBalancerDeleted {
			return true, fmt.Errorf("sdk: load balancer %s was deleted", id)
		}
		return false, nil
	}
	var tick <-chan time.Time
	streamOver := (<-chan error)(failed)
	for {
		if done, err := look(); done {
			return last, err
		}
		select {
		case <-wctx.Done():
			state := "unknown"
			if last != nil {
				state = last.GetState()
			}
			return last, fmt.Errorf("sdk: load balancer %s is %s, not %v: %w", id, state, until, wctx.Err())
		case <-changed:
		case <-streamOver:
			// The stream is gone (refused, cut, or silent): poll from now on.
			streamOver = nil
			t := time.NewTicker(poll)
			defer t.Stop()
			tick = t.C
		case <-tick:
		}
	}
}
