package authz

import (
	"fmt"
	"regexp"
	"strings"
)

// Permission is an API permission as the product names it, such as
// "compute:load-balancers:read".
type Permission string

// Permissions checked by the API. Each maps to one relation of model.fga.
const (
	LoadBalancersRead      Permission = "compute:load-balancers:read"
	LoadBalancersManage    Permission = "compute:load-balancers:manage"
	InstancesRead          Permission = "compute:instances:read"
	InstancesUpdate        Permission = "compute:instances:update"
	InstancesManage        Permission = "compute:instances:manage"
	PoolsRead              Permission = "compute:pools:read"
	PoolsManage            Permission = "compute:pools:manage"
	ProjectsRead           Permission = "compute:projects:read"
	ProjectsManage         Permission = "compute:projects:manage"
	NetworksRead           Permission = "compute:networks:read"
	NetworksManage         Permission = "compute:networks:manage"
	CertificatesRead       Permission = "compute:certificates:read"
	CertificatesManage     Permission = "compute:certificates:manage"
	ProviderAccountsRead   Permission = "compute:provider-accounts:read"
	ProviderAccountsManage Permission = "compute:provider-accounts:manage"
	MetalRead              Permission = "compute:metal:read"
	MetalManage            Permission = "compute:metal:manage"
	SubstratesRead         Permission = "compute:substrates:read"
	EventsRead             Permission = "compute:events:read"
	UsageRead              Permission = "compute:usage:read"
	TenantsRead            Permission = "compute:tenants:read"
	// TenantsManage covers the tenant itself: its settings and its role grants.
	// Only admins hold it.
	TenantsManage Permission = "compute:tenants:manage"
	// PlatformManage covers the platform surface: tenants, provider accounts, pools and quotas.
	PlatformManage Permission = "compute:platform:manage"
)

// AllPermissions lists every tenant permission (all but PlatformManage), in a stable order.
var AllPermissions = []Permission{
	LoadBalancersRead, LoadBalancersManage,
	InstancesRead, InstancesUpdate, InstancesManage,
	PoolsRead, PoolsManage,
	ProjectsRead, ProjectsManage,
	NetworksRead, NetworksManage,
	CertificatesRead, CertificatesManage,
	ProviderAccountsRead, ProviderAccountsManage,
	MetalRead, MetalManage,
	SubstratesRead, EventsRead, UsageRead,
	TenantsRead, TenantsManage,
}

// Relation is the model relation that holds the permission:
// "compute:load-balancers:read" -> "load_balancers_read". OpenFGA relation names
// cannot hold ':'. A permission outside the "compute:" namespace yields "".
func (p Permission) Relation() string {
	rest, ok := strings.CutPrefix(string(p), "compute:")
	if !ok || rest == "" {
		return ""
	}
	return strings.NewReplacer(":", "_", "-", "_").Replace(rest)
}

// Object types of the model.
const (
	TypeTenant               = "compute-tenant"
	TypeProviderLoadBalancer = "compute-provider-load-balancer"
	TypeInstance             = "compute-instance"
	TypePool                 = "compute-pool"
	TypeProject              = "compute-project"
	TypeNetwork              = "compute-network"
	TypeSubnet               = "compute-subnet"
	TypeCertificate          = "compute-certificate"
	TypeProviderAccount      = "compute-provider-account"
	TypeMetalNode            = "compute-metal-node"
	TypePoolSubstrate        = "compute-pool-substrate"
	TypePlatform             = "compute-platform"
)

// principalType is the model type of every principal: users and service
// accounts share it.
const principalType = "user"

// tenantRelation links an object to its owning tenant; it is only ever sent as a
// contextual tuple.
const tenantRelation = "tenant"

// Role is a role a principal holds on a tenant. Admin implies editor implies viewer.
type Role string

// Tenant roles.
const (
	// RoleViewer reads everything of the tenant.
	RoleViewer Role = "viewer"
	// RoleEditor reads, manages and updates everything of the tenant.
	RoleEditor Role = "editor"
	// RoleAdmin holds every permission, including managing the tenant itself.
	RoleAdmin Role = "admin"
)

func (r Role) valid() bool { return r == RoleViewer || r == RoleEditor || r == RoleAdmin }

// Level is a direct grant on one object. Manager implies reader.
type Level string

// Direct grant levels.
const (
	// LevelReader grants the object's read permission.
	LevelReader Level = "reader"
	// LevelManager grants every permission of the object.
	LevelManager Level = "manager"
)

func (l Level) valid() bool { return l == LevelReader || l == LevelManager }

// Object names one object of the model. Tenant is the tenant that the database
// says owns the object; for a compute-tenant object it is the tenant itself
// (empty or equal to ID).
type Object struct {
	Type   string
	ID     string
	Tenant string
}

// String renders the object as OpenFGA spells it ("type:id"), the id encoded
// by EngineID.
func (o Object) String() string { return o.Type + ":" + EngineID(o.ID) }

// PlatformObject is the one compute-platform object.
var PlatformObject = Object{Type: TypePlatform, ID: "root"}

// TenantObject is the compute-tenant object of tenant id, used for list and
// create checks (the object to create does not exist yet).
func TenantObject(id string) Object { return Object{Type: TypeTenant, ID: id, Tenant: id} }

// Check asks whether Principal holds Permission on Object.
type Check struct {
	Principal  string
	Permission Permission
	Object     Object
}

// EngineID encodes an id for the authorization engine. The engine reads ':' as
// the type separator and '#' as userset syntax in every object and user, while
// the API allows ':' in ids (a tenant "acme:prod"). Those two bytes and the
// escape byte itself are percent-encoded, so the encoding is reversible and two
// ids never meet: "a:b" is "a%3Ab" and "a%3Ab" is "a%253Ab". Ids without them,
// which is every id written before the encoding existed, are unchanged, so
// stored tuples keep their meaning.
func EngineID(id string) string {
	if !strings.ContainsAny(id, "%:#") {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 8)
	for i := 0; i < len(id); i++ {
		switch c := id[i]; c {
		case '%':
			b.WriteString("%25")
		case ':':
			b.WriteString("%3A")
		case '#':
			b.WriteString("%23")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// DecodeEngineID reverses EngineID.
func DecodeEngineID(enc string) (string, error) {
	if !strings.Contains(enc, "%") {
		return enc, nil
	}
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		if enc[i] != '%' {
			b.WriteByte(enc[i])
			continue
		}
		if i+2 >= len(enc) {
			return "", fmt.Errorf("%w: engine id %q ends inside an escape", ErrInvalid, enc)
		}
		switch enc[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "3A":
			b.WriteByte(':')
		case "23":
			b.WriteByte('#')
		default:
			return "", fmt.Errorf("%w: engine id %q has an unknown escape", ErrInvalid, enc)
		}
		i += 2
	}
	return b.String(), nil
}

// principalUser renders a principal as the engine's user ("user:<id>").
func principalUser(principal string) string { return principalType + ":" + EngineID(principal) }

// tenantUser renders a tenant as the engine's user of a tenant tuple.
func tenantUser(tenant string) string { return TypeTenant + ":" + EngineID(tenant) }

// idPattern bounds ids sent to the engine: no whitespace, '#' or '*', which
// OpenFGA reads as userset or wildcard syntax.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:@|/-]{1,255}$`)

func validID(kind, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: %s id %q is not a valid id", ErrInvalid, kind, id)
	}
	return nil
}
