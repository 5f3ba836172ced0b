package metal

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/store"
)

// metalNodeProto is the metal view of a node. It reports whether a password is stored and never
// the password: the sealed column is not even read into the view.
func metalNodeProto(n store.MetalNode) *v1.MetalNode {
	out := &v1.MetalNode{
		Id: n.ID, TenantId: n.TenantID, Name: n.Name, State: n.State,
		Bmc: &v1.MetalBmc{
			Address: n.BMCAddress, Port: int32(n.BMCPort), Protocol: n.BMCProtocol, Username: n.BMCUsername,
			CredentialsSet: len(n.BMCPasswordSealed) > 0, InsecureTls: n.BMCInsecureTLS,
			CaPinned: n.BMCCACertPEM != "", LegacyBoot: n.BMCLegacyBoot,
			SystemId: n.BMCSystemID, Authentication: n.BMCAuth,
		},
		LastError: n.LastError, FailureReason: n.FailureReason, LastAnswer: n.LastAnswer,
		PowerState: n.PowerState, PowerRequested: n.PowerRequested, Image: n.Image,
		StateEnteredTime: timestamppb.New(n.StateEnteredAt),
		CreateTime:       timestamppb.New(n.CreatedAt), UpdateTime: timestamppb.New(n.UpdatedAt),
	}
	if n.PowerReadAt != nil {
		out.PowerReadTime = timestamppb.New(*n.PowerReadAt)
	}
	for _, v := range metal.Allowed(metal.State(n.State)) {
		out.AllowedVerbs = append(out.AllowedVerbs, string(v))
	}
	if len(n.Inventory) > 0 {
		inv := &v1.MetalInventory{}
		// The reconciler writes the inventory as protojson of MetalInventory; a row it cannot
		// read (an older layout) shows no inventory rather than failing the call.
		if core.StoredJSON.Unmarshal(n.Inventory, inv) == nil {
			out.Inventory = inv
		}
	}
	return out
}
