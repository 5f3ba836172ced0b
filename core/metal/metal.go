package metal

import (
	"context"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"time"

	"better-compute.dev/compute/apierr"
	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/contract"
	"better-compute.dev/compute/core"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/gen/go/bettercompute/compute/v1/errcode"
	"better-compute.dev/compute/ids"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/metal"
	"better-compute.dev/compute/netguard"
	"better-compute.dev/compute/seal"
	"better-compute.dev/compute/store"
)

// Default BMC ports, filled in at enrollment so one machine cannot be enrolled twice under two
// spellings of its port.
const (
	defaultRedfishPort = 443
	defaultIPMIPort    = 623
)

// SystemLister logs in to a Redfish BMC with the enrollment's settings (through the
// outbound policy) and returns the ids of the systems it manages. app wires provider/bmc's.
type SystemLister func(ctx context.Context, b *v1.MetalBmcSettings) ([]string, error)

// metalSystemsWait bounds enrollment's look at a Redfish BMC's systems, so a BMC that hangs holds
// an API call this long at most: a BMC that does not answer in time is enrolled as asked, and the
// reconciler checks the system on every run (the probe shows the ids in lastError).
const metalSystemsWait = 5 * time.Second

// checkMetalSystem refuses a Redfish enrollment that does not name its system behind a BMC
// managing several, or names one the BMC does not have, listing the ids the BMC has. It asks the
// BMC before any transaction; a BMC that cannot be asked (unreachable, credentials refused)
// passes here and is reported by the probe.
func (s *Service) checkMetalSystem(ctx context.Context, b *v1.MetalBmcSettings) error {
	if s.Systems == nil || b.GetProtocol() != "redfish" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, metalSystemsWait)
	defer cancel()
	ids, err := s.Systems(ctx, b)
	if err != nil || len(ids) == 0 {
		return nil
	}
	switch want := b.GetSystemId(); {
	case want == "" && len(ids) > 1:
		return apierr.Invalid("bmc.systemId", "the BMC manages %d systems (%s): bmc.systemId must name one", len(ids), strings.Join(ids, ", "))
	case want != "" && !slices.Contains(ids, want):
		return apierr.Invalid("bmc.systemId", "the BMC has no system %q (it has %s)", want, strings.Join(ids, ", "))
	}
	return nil
}

// EnrollNode records a machine by its BMC, enrolled, with its password sealed and bound to the
// new node's id, and queues a probe of the BMC. It changes nothing at the BMC; for Redfish it
// reads which systems the BMC manages (checkMetalSystem).
func (s *Service) EnrollNode(ctx context.Context, r *v1.EnrollNodeRequest) (*v1.MetalNode, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.base.AuthorizeTenant(ctx, c, authz.MetalManage, r.GetTenantId()); err != nil {
		return nil, err
	}
	b := r.GetBmc()
	if err := checkBMCSettings(b); err != nil {
		return nil, err
	}
	// The address is a connection the control plane will make on the tenant's behalf. A name
	// that does not resolve yet (DNS provisioned after enrollment) is accepted: the reconciler
	// checks it again after resolution, at connect time.
	addrs, err := s.base.Outbound.Resolve(ctx, b.GetAddress())
	if err != nil && !errors.Is(err, netguard.ErrUnresolved) {
		return nil, apierr.Invalid("bmc.address", "bmc.address %q is not allowed: %v", b.GetAddress(), err)
	}
	if err := s.checkMetalSystem(ctx, b); err != nil {
		return nil, err
	}
	row := store.MetalNode{
		ID: ids.New(ids.MetalNode), TenantID: r.GetTenantId(), Name: r.GetName(), State: string(metal.Enrolled),
		PendingWork: store.MetalWorkProbe, BMCAddress: b.GetAddress(), BMCHostKey: netguard.HostKey(addrs, b.GetAddress()),
		BMCPort:     effectivePort(b.GetProtocol(), b.GetPort()),
		BMCProtocol: b.GetProtocol(), BMCUsername: b.GetUsername(), BMCInsecureTLS: b.GetInsecureTls(),
		BMCCACertPEM: b.GetCaCertPem(), BMCLegacyBoot: b.GetLegacyBoot(), BMCSystemID: b.GetSystemId(),
	}
	if row.BMCPasswordSealed, err = s.sealBMCPassword(row.ID, b.GetPassword()); err != nil {
		return nil, err
	}
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		var err error
		if row, err = store.InsertMetalNode(ctx, tx, row); err != nil {
			return err
		}
		if err := appendMetalEvent(ctx, tx, row, lifecycle.Enroll, map[string]any{
			"name": row.Name, "state": row.State, "bmcAddress": row.BMCAddress, "bmcProtocol": row.BMCProtocol,
		}); err != nil {
			return err
		}
		return store.EnqueueGroup(ctx, tx, contract.MetalKind, row.ID, row.TenantID, nil)
	})
	if err != nil {
		return nil, metalStoreErr(err)
	}
	return metalNodeProto(row), nil
}

// GetNode returns one node's metal view.
func (s *Service) GetNode(ctx context.Context, r *v1.GetNodeRequest) (*v1.MetalNode, error) {
	c, err := core.RequireCaller(ctx)
	if err != nil {
		return nil, err
	}
	n, err := store.GetMetalNode(ctx, s.base.Store.Q(), r.GetNodeId())
	if _, err := s.base.AuthorizeOwned(ctx, c, metalTarget(r.GetTenantId(), r.GetNodeId()), n.TenantID, err, authz.MetalRead, ""); err != nil {
		return nil, err
	}
	return metalNodeProto(n), nil
}

// ListNodes returns the tenant's nodes the caller may read: the tenant is checked, then each
// ListNodes returns the tenant's nodes in enrollment order, optionally in one state
// (ListNodesPage without the token).
func (s *Service) ListNodes(ctx context.Context, r *v1.ListNodesRequest) ([]*v1.MetalNode, error) {
	ns, _, err := s.ListNodesPage(ctx, r)
	return ns, err
}

// ListNodesPage returns at most 1000 nodes, or one page, and the next page's token. A state that
// is none is INVALID_INPUT before anything is checked.
func (s *Service) ListNodesPage(ctx context.Context, r *v1.ListNodesRequest) ([]*v1.MetalNode, string, error) {
	if _, err := core.RequireCaller(ctx); err != nil {
		return nil, "", err
	}
	if r.GetState() != "" {
		if _, err := metal.ParseState(r.GetState()); err != nil {
			return nil, "", apierr.Invalid("state", "%q is not a provision state", r.GetState())
		}
	}
	return core.ListPage(ctx, s.base, r, core.Listing[store.MetalNode]{
		Method: "metal", What: "metal node", Perm: authz.MetalRead, Tenant: r.GetTenantId(), Filters: []string{r.GetState()},
		Key: func(n store.MetalNode) store.Cursor { return core.ByCreated(n.CreatedAt, n.ID) },
		Query: func(p store.Page) ([]store.MetalNode, error) {
			return store.ListMetalNodes(ctx, s.base.Store.Q(), store.ListMetalNodesParams{TenantID: r.GetTenantId(), State: r.GetState(), Page: p})
		},
	}, core.Each(core.Infallible(metalNodeProto)))
}

// InspectNode is the inspect verb (see MoveNode).
func (s *Service) InspectNode(ctx context.Context, r *v1.InspectNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Inspect, "")
}

// CommissionNode is the commission verb (see MoveNode).
func (s *Service) CommissionNode(ctx context.Context, r *v1.CommissionNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Commission, "")
}

// DeployNode is the deploy verb, recording the image asked for (see MoveNode).
func (s *Service) DeployNode(ctx context.Context, r *v1.DeployNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Deploy, r.GetImage())
}

// RescueNode is the rescue verb (see MoveNode).
func (s *Service) RescueNode(ctx context.Context, r *v1.RescueNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.RescueVerb, "")
}

// UnrescueNode is the unrescue verb (see MoveNode).
func (s *Service) UnrescueNode(ctx context.Context, r *v1.UnrescueNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Unrescue, "")
}

// ReleaseNode is the release verb (see MoveNode).
func (s *Service) ReleaseNode(ctx context.Context, r *v1.ReleaseNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Release, "")
}

// RetireNode is the retire verb (see MoveNode).
func (s *Service) RetireNode(ctx context.Context, r *v1.RetireNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Retire, "")
}

// AbortNode is the abort verb (see MoveNode).
func (s *Service) AbortNode(ctx context.Context, r *v1.AbortNodeRequest) (*v1.MetalNode, error) {
	return s.MoveNode(ctx, r.GetTenantId(), r.GetNodeId(), metal.Abort, "")
}

// MoveNode applies a verb to a node: it checks the move against the provision state table
// (metal.Move) and records it, with its event and a work item for the metal reconciler, in one
// SERIALIZABLE transaction that holds the node's row lock from the state check to the write.
// Of concurrent verbs on one node exactly one wins; the others run again on the new state and
// are refused. A move the table refuses is INVALID_STATE whose reason is the current state; an
// unknown verb is INVALID_INPUT. image is recorded by deploy only. Nothing here touches the
// machine.
func (s *Service) MoveNode(ctx context.Context, tenantID, nodeID string, verb metal.Verb, image string) (*v1.MetalNode, error) {
	// Verbs come from the handlers' constants: an unknown one is a programming error, refused
	// before anything is looked up.
	if _, err := metal.ParseVerb(string(verb)); err != nil {
		return nil, apierr.Invalid("verb", "%q is not a metal verb", verb)
	}
	_, _, err := s.authorizeMetalNode(ctx, tenantID, nodeID)
	if err != nil {
		return nil, err
	}
	var out store.MetalNode
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		n, err := store.GetMetalNodeForUpdate(ctx, tx, nodeID)
		if err != nil {
			return err
		}
		tr, err := moveOf(n, verb)
		if err != nil {
			return err
		}
		m := store.MetalMove{ID: n.ID, Version: n.Version, State: string(tr.To), PendingWork: store.MetalWorkNone}
		if !tr.Transient() && tr.Workflow != metal.WorkflowNone {
			m.PendingWork = store.MetalWorkRetire // retire lands at once; the power-off follows
		}
		if verb == metal.Abort {
			m.FailureReason = "aborted while " + string(tr.From)
		}
		if verb == metal.Deploy {
			m.SetImage, m.Image = true, image
		}
		if out, err = store.RecordMetalMove(ctx, tx, m); err != nil {
			return err
		}
		if err := appendMetalEvent(ctx, tx, out, lifecycle.Move, map[string]any{
			"verb": string(verb), "from": string(tr.From), "to": string(tr.To),
		}); err != nil {
			return err
		}
		return store.EnqueueGroup(ctx, tx, contract.MetalKind, out.ID, out.TenantID, nil)
	})
	if err != nil {
		return nil, metalStoreErr(err)
	}
	return metalNodeProto(out), nil
}

// UpdateNodeCredentials replaces the BMC user and password of a node that is not retired. The
// state stays; the version grows, so a workflow still running with the old credentials records
// nothing and runs again with the new ones, and the BMC is probed.
func (s *Service) UpdateNodeCredentials(ctx context.Context, r *v1.UpdateNodeCredentialsRequest) (*v1.MetalNode, error) {
	_, obj, err := s.authorizeMetalNode(ctx, r.GetTenantId(), r.GetNodeId())
	if err != nil {
		return nil, err
	}
	if r.GetUsername() == "" || r.GetPassword() == "" {
		return nil, apierr.Invalid("password", "username and password are required")
	}
	sealed, err := s.sealBMCPassword(obj.ID, r.GetPassword())
	if err != nil {
		return nil, err
	}
	var out store.MetalNode
	err = s.base.Store.ExecuteTx(ctx, func(tx store.Tx) error {
		n, err := store.GetMetalNodeForUpdate(ctx, tx, obj.ID)
		if err != nil {
			return err
		}
		if n.State == string(metal.Retired) {
			return apierr.State(n.State, "metal node %s is %s: its credentials are no longer used", n.ID, n.State)
		}
		out, err = store.UpdateMetalCredentials(ctx, tx, store.MetalCredentials{
			ID: n.ID, Version: n.Version, Username: r.GetUsername(), PasswordSealed: sealed,
		})
		if err != nil {
			return err
		}
		if err := appendMetalEvent(ctx, tx, out, lifecycle.Credentials, map[string]any{"state": out.State}); err != nil {
			return err
		}
		return store.EnqueueGroup(ctx, tx, contract.MetalKind, out.ID, out.TenantID, nil)
	})
	if err != nil {
		return nil, metalStoreErr(err)
	}
	return metalNodeProto(out), nil
}

// moveOf asks the state table about verb from the node's recorded state.
func moveOf(n store.MetalNode, verb metal.Verb) (metal.Transition, error) {
	from, err := metal.ParseState(n.State)
	if err != nil {
		return metal.Transition{}, apierr.InternalErr(err)
	}
	tr, err := metal.Move(from, verb)
	var me *metal.MoveError
	switch {
	case errors.As(err, &me):
		return tr, apierr.State(string(me.State), "cannot %s metal node %s: it is %s", verb, n.ID, me.State)
	case errors.Is(err, metal.ErrUnknownVerb):
		return tr, apierr.Invalid("verb", "%q is not a metal verb", verb)
	case err != nil:
		return tr, apierr.InternalErr(err)
	}
	return tr, nil
}

// authorizeMetalNode checks compute:metal:manage on a node named by id: another tenant's node,
// like a missing one, is NOT_FOUND (field nodeId).
func (s *Service) authorizeMetalNode(ctx context.Context, tenantID, nodeID string) (core.Caller, authz.Object, error) {
	return s.base.AuthorizeByID(ctx, metalTarget(tenantID, nodeID), authz.MetalManage, authz.MetalRead)
}

// metalTarget names a metal node of tenantID by id for the by-id prologue.
func metalTarget(tenantID, nodeID string) core.Target {
	return core.Target{Type: authz.TypeMetalNode, ID: nodeID, Tenant: tenantID, What: "metal node", Field: "nodeId"}
}

// sealBMCPassword seals a BMC password bound to the node's id: a sealed value copied to another
// node's row does not open there.
func (s *Service) sealBMCPassword(nodeID, password string) ([]byte, error) {
	if s.base.Keyring == nil {
		return nil, apierr.InternalErr(errors.New("core: no sealing key configured for BMC credentials"))
	}
	sealed, err := s.base.Keyring.SealSecret(seal.Secret(password), []byte(nodeID))
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	return []byte(sealed), nil
}

// checkBMCSettings repeats the schema's rules that matter here (core is also called without the
// validating interceptor) and checks what the schema cannot: that a pinned CA parses.
func checkBMCSettings(b *v1.MetalBmcSettings) error {
	switch {
	case b == nil:
		return apierr.Invalid("bmc", "bmc is required")
	case b.GetAddress() == "":
		return apierr.Invalid("bmc.address", "bmc.address is required")
	case b.GetProtocol() != "redfish" && b.GetProtocol() != "ipmi":
		return apierr.Invalid("bmc.protocol", "bmc.protocol must be redfish or ipmi")
	case b.GetPort() < 0 || b.GetPort() > 65535:
		return apierr.Invalid("bmc.port", "bmc.port must be 1-65535")
	case b.GetUsername() == "":
		return apierr.Invalid("bmc.username", "bmc.username is required")
	case b.GetPassword() == "":
		return apierr.Invalid("bmc.password", "bmc.password is required")
	case b.GetInsecureTls() && b.GetCaCertPem() != "":
		return apierr.Invalid("bmc.caCertPem", "insecureTls and caCertPem exclude core.Each other")
	case b.GetSystemId() != "" && b.GetProtocol() != "redfish":
		return apierr.Invalid("bmc.systemId", "bmc.systemId names a Redfish system; an IPMI BMC has none")
	}
	if b.GetCaCertPem() != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(b.GetCaCertPem())) {
		return apierr.Invalid("bmc.caCertPem", "bmc.caCertPem holds no PEM certificate")
	}
	return nil
}

func effectivePort(protocol string, port int32) int {
	switch {
	case port != 0:
		return int(port)
	case protocol == "ipmi":
		return defaultIPMIPort
	}
	return defaultRedfishPort
}

// metalStoreErr maps store errors of metal calls, telling a duplicate name from a duplicate BMC.
func metalStoreErr(err error) error {
	if errors.Is(err, store.ErrConflict) && store.ConstraintName(err) == store.MetalNodeBMCKey {
		return &apierr.Error{Code: errcode.InvalidInput, Field: "bmc.address", Cause: err,
			Message: "a metal node of this tenant already uses that BMC (the same host, protocol, port and system)"}
	}
	return core.StoreErr(err, "metal node")
}

// appendMetalEvent publishes what transition t of a metal node publishes (lifecycle.MetalNode).
func appendMetalEvent(ctx context.Context, tx store.Tx, n store.MetalNode, t lifecycle.Transition, data map[string]any) error {
	return lifecycle.MetalNode.Apply(ctx, tx, t, lifecycle.Subject{TenantID: n.TenantID, ID: n.ID}, data)
}
