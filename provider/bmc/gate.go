package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"better-compute.dev/compute/netguard"
)

// ErrStopped is a run stopped before it finished: its context ended (an abort cancelled it,
// the lease was lost, the replica is stopping) or its Check refused to go on. Nothing is sent
// to the BMC once a run is stopped. It is retryable: whoever owns the node next decides.
var ErrStopped = errors.New("bmc: stopped")

// Check is asked before every request a run sends to the BMC (every HTTP connection, every
// ipmitool command); an error stops the run there, before the request. The metal reconciler
// checks that the node has not moved (an abort) since the run began.
type Check func(context.Context) error

// gate is what every request of one run passes: the outbound policy, the run's own context
// (once it ends, every later dial is refused and every open connection is closed, so nothing
// bmclib still has in flight in a goroutine reaches the BMC), and the caller's Check.
type gate struct {
	outbound netguard.Policy
	run      context.Context
	stop     context.CancelCauseFunc
	check    Check
}

// newGate starts a run's gate. With a check and a positive watch interval the check is also
// asked every interval while the run goes on, so a request already running when the node moves
// (an ipmitool command in its RMCP+ handshake, a power change settling) is stopped there: the
// run's context ends, which kills a running ipmitool and closes every open connection.
func newGate(ctx context.Context, outbound netguard.Policy, check Check, watch time.Duration) (*gate, context.Context) {
	run, stop := context.WithCancelCause(ctx)
	g := &gate{outbound: outbound, run: run, stop: stop, check: check}
	if check != nil && watch > 0 {
		go g.watch(watch)
	}
	return g, run
}

// watch asks the check every interval until the run ends or the check refuses.
func (g *gate) watch(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.run.Done():
			return
		case <-t.C:
			if g.allow(g.run) != nil {
				return
			}
		}
	}
}

// close ends the run: nothing more goes out.
func (g *gate) close() { g.stop(errRunOver) }

var errRunOver = errors.New("the run is over")

// allow says whether one more request may go out.
func (g *gate) allow(ctx context.Context) error {
	if g.run.Err() != nil {
		return fmt.Errorf("%w: %v", ErrStopped, context.Cause(g.run))
	}
	if g.check != nil {
		if err := g.check(ctx); err != nil {
			err = fmt.Errorf("%w: %v", ErrStopped, err)
			g.stop(err)
			return err
		}
	}
	return nil
}

// dialContext wraps dial: each connection passes allow first and is closed when the run ends.
func (g *gate) dialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := g.allow(ctx); err != nil {
			return nil, err
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(g.run, func() { _ = c.Close() })
		return c, nil
	}
}
