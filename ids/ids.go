// Package ids makes and checks the platform's resource ids: a type prefix such as "plb_" followed
// by a lowercase Crockford-base32 ULID, so ids sort by creation time within a millisecond's
// precision and match the seed's patterns (^plb_[0-9a-hjkmnp-tv-z]{26,52}$ and the like).
package ids

import (
	"crypto/rand"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Prefixes of every resource type the platform names.
const (
	LoadBalancer    = "plb_"
	Pool            = "pool_"
	Project         = "prj_"
	Subnet          = "snet_"
	Network         = "net_"
	Certificate     = "pcert_"
	Instance        = "inst_"
	Account         = "pacct_"
	Principal       = "prn_"
	Token           = "tok_"
	Event           = "evt_"
	MetalNode       = "mnode_"
	Substrate       = "psub_"
	MachineFlavor   = "flv_"
	UsageRecord     = "use_"
	IdempotencyKeyT = "idem_"
)

var (
	mu      sync.Mutex
	entropy = ulid.Monotonic(rand.Reader, 0)
)

// New returns prefix + a fresh lowercase ULID. Within one process ids are strictly increasing.
func New(prefix string) string {
	mu.Lock()
	id := ulid.MustNew(ulid.Timestamp(time.Now()), entropy)
	mu.Unlock()
	return prefix + strings.ToLower(id.String())
}

var body = regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{26,52}$`)

// Valid reports whether id is prefix followed by a well-formed id body.
func Valid(prefix, id string) bool {
	return strings.HasPrefix(id, prefix) && body.MatchString(id[len(prefix):])
}
