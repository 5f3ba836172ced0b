package app

import (
	"context"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/provider/bmc"
	"better-compute.dev/compute/seal"
)

// metalRunner is the BMC runner of the metal reconciler and of enrollment's look at a BMC's
// systems: the outbound policy and the power-settle bound (BC_METAL_POWER_SETTLE) configured.
func (a *App) metalRunner() *bmc.Runner {
	return &bmc.Runner{Logger: a.Config.Logger, Outbound: a.Base.Outbound, PowerSettle: a.Config.Reconcilers.MetalPowerSettle}
}

// metalSystems lists the systems behind a Redfish BMC being enrolled (metal.SystemLister),
// through the outbound policy like every BMC connection.
func metalSystems(outbound netguard.Policy) func(ctx context.Context, b *v1.MetalBmcSettings) ([]string, error) {
	r := &bmc.Runner{Outbound: outbound}
	return func(ctx context.Context, b *v1.MetalBmcSettings) ([]string, error) {
		t := bmc.Target{
			Address: b.GetAddress(), Port: int(b.GetPort()), Protocol: bmc.Protocol(b.GetProtocol()),
			Username: b.GetUsername(), Password: seal.Secret(b.GetPassword()), InsecureTLS: b.GetInsecureTls(),
		}
		if b.GetCaCertPem() != "" {
			t.CACertPEM = []byte(b.GetCaCertPem())
		}
		return r.SystemIDs(ctx, t)
	}
}
