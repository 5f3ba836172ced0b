package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// MetalNode is a row of metal_nodes: a bare-metal machine, its BMC and its provision state.
// BMCPasswordSealed is the sealed password (seal.Keyring, bound to ID); nothing in this package
// ever opens it.
type MetalNode struct {
	ID             string
	TenantID       string
	Name           string
	State          string
	StateEnteredAt time.Time
	Version        int64
	PendingWork    string // MetalWorkNone, MetalWorkProbe or MetalWorkRetire
	BMCAddress     string
	// BMCHostKey is the address's normalised form that duplicate detection compares
	// (netguard.HostKey), set at enrollment.
	BMCHostKey        string
	BMCPort           int
	BMCProtocol       string
	BMCUsername       string
	BMCPasswordSealed []byte
	BMCInsecureTLS    bool
	BMCCACertPEM      string
	BMCLegacyBoot     bool
	// BMCSystemID is the Redfish system this node is behind a BMC managing several; empty is
	// the BMC's only one. Part of the duplicate key.
	BMCSystemID string
	// BMCAuth is how the reconciler last authenticated (session, basic, rmcp+).
	BMCAuth        string
	Image          string
	LastError      string
	FailureReason  string
	LastAnswer     string
	PowerState     string
	PowerReadAt    *time.Time // when the BMC reported PowerState; nil before it first did
	PowerRequested string     // a power change's state not yet shown by the reading
	Inventory      []byte     // JSON of the hardware summary; nil before the first inspection
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Values of MetalNode.PendingWork: what the reconciler owes a node in a resting state.
const (
	MetalWorkNone   = ""
	MetalWorkProbe  = "probe"
	MetalWorkRetire = "retire"
)

// Constraint names of metal_nodes, for telling a duplicate name from a duplicate BMC.
const (
	MetalNodeNameKey = "metal_nodes_name_key"
	MetalNodeBMCKey  = "metal_nodes_bmc_key"
)

const metalNodeCols = `id, tenant_id, name, state, state_entered_at, version, pending_work, bmc_address, bmc_host_key, bmc_port,
	bmc_protocol, bmc_username, bmc_password_sealed, bmc_insecure_tls, bmc_ca_cert_pem, bmc_legacy_boot, image,
	last_error, failure_reason, last_answer, power_state, inventory, created_at, updated_at,
	bmc_system_id, bmc_auth, power_read_at, power_requested`

func scanMetalNode(r pgx.Row) (MetalNode, error) {
	var n MetalNode
	var port int64
	err := r.Scan(&n.ID, &n.TenantID, &n.Name, &n.State, &n.StateEnteredAt, &n.Version, &n.PendingWork,
		&n.BMCAddress, &n.BMCHostKey, &port, &n.BMCProtocol, &n.BMCUsername, &n.BMCPasswordSealed, &n.BMCInsecureTLS,
		&n.BMCCACertPEM, &n.BMCLegacyBoot, &n.Image, &n.LastError, &n.FailureReason, &n.LastAnswer,
		&n.PowerState, &n.Inventory, &n.CreatedAt, &n.UpdatedAt, &n.BMCSystemID, &n.BMCAuth, &n.PowerReadAt, &n.PowerRequested)
	n.BMCPort = int(port)
	return n, err
}

// InsertMetalNode adds a node in n.State with n.PendingWork. A duplicate name, or a duplicate BMC
// (protocol, BMCHostKey, port and BMCSystemID) within the tenant, is ErrConflict on MetalNodeNameKey or
// MetalNodeBMCKey. An empty BMCHostKey is the address's spelling normalised without resolving
// (the API always sets it: netguard.HostKey).
func InsertMetalNode(ctx context.Context, q Querier, n MetalNode) (MetalNode, error) {
	return one(ctx, q, scanMetalNode,
		`INSERT INTO metal_nodes (id, tenant_id, name, state, pending_work, bmc_address, bmc_port, bmc_protocol,
		        bmc_username, bmc_password_sealed, bmc_insecure_tls, bmc_ca_cert_pem, bmc_legacy_boot, bmc_host_key,
		        bmc_system_id)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
		         coalesce(nullif($14, ''), lower(rtrim(btrim($6, '[]'), '.'))), $15)
		 RETURNING `+metalNodeCols,
		n.ID, n.TenantID, n.Name, n.State, n.PendingWork, n.BMCAddress, int64(n.BMCPort), n.BMCProtocol,
		n.BMCUsername, n.BMCPasswordSealed, n.BMCInsecureTLS, n.BMCCACertPEM, n.BMCLegacyBoot, n.BMCHostKey, n.BMCSystemID)
}

// GetMetalNode reads a node by id alone; callers compare its tenant.
func GetMetalNode(ctx context.Context, q Querier, id string) (MetalNode, error) {
	return one(ctx, q, scanMetalNode, `SELECT `+metalNodeCols+` FROM metal_nodes WHERE id = $1`, id)
}

// GetMetalNodeForUpdate reads a node and locks its row for the transaction: a verb holds the
// lock from reading the state to recording the move, so two verbs on one node never both pass
// the state check.
func GetMetalNodeForUpdate(ctx context.Context, q Querier, id string) (MetalNode, error) {
	return one(ctx, q, scanMetalNode, `SELECT `+metalNodeCols+` FROM metal_nodes WHERE id = $1 FOR UPDATE`, id)
}

// ListMetalNodesParams filters ListMetalNodes.
type ListMetalNodesParams struct {
	TenantID string
	State    string // empty: every state
	Page
}

// ListMetalNodes returns a tenant's nodes in enrollment order (ids are time-ordered).
func ListMetalNodes(ctx context.Context, q Querier, p ListMetalNodesParams) ([]MetalNode, error) {
	return collect(ctx, q, scanMetalNode,
		`SELECT `+metalNodeCols+` FROM metal_nodes
		  WHERE tenant_id = $1 AND ($2 = '' OR state = $2)
		    AND ($4 = '' OR (created_at, id) > ($5::TIMESTAMPTZ, $4::TEXT))
		  ORDER BY created_at, id LIMIT $3`, p.TenantID, p.State, p.limit(), p.afterID(), p.afterTime())
}

// MetalMove is a verb's change of a node, recorded by RecordMetalMove.
type MetalMove struct {
	ID string
	// Version is the version the verb read (under the row lock); the write fails with
	// ErrNotFound when it moved.
	Version       int64
	State         string
	PendingWork   string
	FailureReason string // abort's reason; empty clears the previous failure's
	SetImage      bool   // deploy: record Image
	Image         string
}

// RecordMetalMove records a verb's move: the new state entered now, the version grown, the
// previous failure and error cleared (or abort's reason set).
func RecordMetalMove(ctx context.Context, q Querier, m MetalMove) (MetalNode, error) {
	return one(ctx, q, scanMetalNode,
		`UPDATE metal_nodes SET state = $3, state_entered_at = now(), version = version + 1, pending_work = $4,
		        failure_reason = $5, last_error = '', image = CASE WHEN $6 THEN $7 ELSE image END, updated_at = now()
		  WHERE id = $1 AND version = $2 RETURNING `+metalNodeCols,
		m.ID, m.Version, m.State, m.PendingWork, m.FailureReason, m.SetImage, m.Image)
}

// MetalCredentials replaces a node's BMC user and sealed password.
type MetalCredentials struct {
	ID             string
	Version        int64 // as read under the row lock
	Username       string
	PasswordSealed []byte
}

// UpdateMetalCredentials stores new credentials, asks for a probe and grows the version, so a
// workflow still running with the old credentials records nothing and runs again.
func UpdateMetalCredentials(ctx context.Context, q Querier, c MetalCredentials) (MetalNode, error) {
	return one(ctx, q, scanMetalNode,
		`UPDATE metal_nodes SET bmc_username = $3, bmc_password_sealed = $4, version = version + 1,
		        pending_work = CASE WHEN pending_work = '' THEN 'probe' ELSE pending_work END, updated_at = now()
		  WHERE id = $1 AND version = $2 RETURNING `+metalNodeCols,
		c.ID, c.Version, c.Username, c.PasswordSealed)
}

// MetalOutcome is what the metal reconciler learned from a run at the BMC.
type MetalOutcome struct {
	ID string
	// Version is the version the reconciler read before the run; a node that moved since
	// (abort, another verb, new credentials) is left alone: ErrNotFound.
	Version int64
	// State is the state to record; a different state from the current one is entered now
	// and grows the version.
	State         string
	PendingWork   string
	LastError     string
	FailureReason string
	LastAnswer    string
	PowerState    string // empty keeps the previous one
	// PowerReadAt is when the BMC reported PowerState (nil keeps the previous reading's time);
	// PowerRequested is written as given (empty: nothing left to settle).
	PowerReadAt    *time.Time
	PowerRequested string
	BMCAuth        string // empty keeps the previous one
	Inventory      []byte // nil keeps the previous one
	ClearImage     bool
}

// RecordMetalOutcome writes a reconciler's outcome, fenced on the version it read.
func RecordMetalOutcome(ctx context.Context, q Querier, o MetalOutcome) (MetalNode, error) {
	return one(ctx, q, scanMetalNode,
		`UPDATE metal_nodes SET
		        version = version + CASE WHEN state <> $3 THEN 1 ELSE 0 END,
		        state_entered_at = CASE WHEN state <> $3 THEN now() ELSE state_entered_at END,
		        state = $3, pending_work = $4, last_error = $5, failure_reason = $6, last_answer = $7,
		        power_state = CASE WHEN $8 = '' THEN power_state ELSE $8 END,
		        inventory = coalesce($9::jsonb, inventory),
		        image = CASE WHEN $10 THEN '' ELSE image END,
		        power_read_at = coalesce($11, power_read_at), power_requested = $12,
		        bmc_auth = CASE WHEN $13 = '' THEN bmc_auth ELSE $13 END,
		        updated_at = now()
		  WHERE id = $1 AND version = $2 RETURNING `+metalNodeCols,
		o.ID, o.Version, o.State, o.PendingWork, o.LastError, o.FailureReason, o.LastAnswer, o.PowerState,
		nullJSON(o.Inventory), o.ClearImage, o.PowerReadAt, o.PowerRequested, o.BMCAuth)
}

// MetalPowerNote is a power change a run is waiting for, shown on the node while it settles.
type MetalPowerNote struct {
	ID             string
	Version        int64 // as the run read it; a node that moved since is left alone
	PowerState     string
	PowerReadAt    *time.Time
	PowerRequested string
}

// NoteMetalPower records the BMC's reading and the requested state while a change settles,
// fenced on the version; ErrNotFound when the node moved.
func NoteMetalPower(ctx context.Context, q Querier, p MetalPowerNote) error {
	tag, err := q.Exec(ctx,
		`UPDATE metal_nodes SET power_state = CASE WHEN $3 = '' THEN power_state ELSE $3 END,
		        power_read_at = coalesce($4, power_read_at), power_requested = $5, updated_at = now()
		  WHERE id = $1 AND version = $2`, p.ID, p.Version, p.PowerState, p.PowerReadAt, p.PowerRequested)
	if err != nil {
		return TranslateError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DatabaseNow is the database clock, the one state_entered_at is written with: deadlines of
// transient states are measured on it, so replicas with skewed clocks agree.
func DatabaseNow(ctx context.Context, q Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, TranslateError(err)
}

// nullJSON passes nil as SQL NULL rather than an empty (invalid) JSON text.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
