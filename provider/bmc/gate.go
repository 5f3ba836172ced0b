package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"

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

func newGate(ctx context.Context, outbound netguard.Policy, check Check) (*gate, context.Context) {
	run, stop := context.WithCancelCause(ctx)
	return &gate{outbound: outbound, run: run, stop: stop, check: check}, run
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
