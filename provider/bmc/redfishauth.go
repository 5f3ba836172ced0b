package bmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/stmcginnis/gofish"
	gfcommon "github.com/stmcginnis/gofish/common"
	"github.com/stmcginnis/gofish/redfish"
)

// How a run authenticates to the BMC (Report.Auth, the node's bmc.authentication).
const (
	AuthSession = "session" // a Redfish session (X-Auth-Token), logged out at the end
	AuthBasic   = "basic"   // HTTP Basic on every request, over the target's TLS
	AuthRMCP    = "rmcp+"   // IPMI v2 lanplus
)

// serviceRootLinks is what the service root says about sessions: DSP0266 makes a service that
// supports sessions name its SessionService and Links.Sessions.
type serviceRootLinks struct {
	SessionService struct {
		ID string `json:"@odata.id"`
	}
	Links struct {
		Sessions struct {
			ID string `json:"@odata.id"`
		}
	}
}

// redfishAuth reads the service root (no credentials: Redfish requires it readable) and picks
// the authentication: a session when the root names where to create one, else HTTP Basic. It
// decides from the document, never from an error's text.
func redfishAuth(ctx context.Context, t Target, client *http.Client) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, redfishEndpoint(t)+"/redfish/v1/", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		// Keep the status typed, as gofish reports it, so it is classified like any answer.
		return "", gfcommon.ConstructError(resp.StatusCode, body)
	}
	var root serviceRootLinks
	if err := json.Unmarshal(body, &root); err != nil {
		return "", fmt.Errorf("the service root is not a Redfish document: %w", errUnreadableRoot)
	}
	if root.Links.Sessions.ID == "" {
		return AuthBasic, nil
	}
	return AuthSession, nil
}

var errUnreadableRoot = errors.New("unreadable service root")

// redfishEndpoint is the BMC's base URL (always HTTPS).
func redfishEndpoint(t Target) string {
	return "https://" + net.JoinHostPort(strings.Trim(t.host(), "[]"), t.port())
}

// loginRedfish connects the run's gofish client with the chosen authentication. A session
// service that is named but cannot create sessions (404, 405, 501: it is not there, or does
// not take POST) is a broken SessionService: the run falls back to Basic once. A refused
// login (401, 403) is never tried again another way, so wrong credentials are one refused
// login per attempt. With Basic nothing is sent here: the first authenticated read tells.
func loginRedfish(ctx context.Context, t Target, auth string, client *http.Client) (*gofish.APIClient, string, error) {
	cfg := gofish.ClientConfig{
		Endpoint: redfishEndpoint(t), Username: t.Username, Password: t.Password.Reveal(),
		HTTPClient: client, BasicAuth: auth == AuthBasic,
	}
	c, err := gofish.ConnectContext(ctx, cfg)
	if err == nil || auth == AuthBasic || !sessionServiceMissing(err) {
		return c, auth, err
	}
	cfg.BasicAuth = true
	c, err = gofish.ConnectContext(ctx, cfg)
	return c, AuthBasic, err
}

// sessionServiceMissing says whether a session login failed because the service has no
// working SessionService (by the answer's status, not its text).
func sessionServiceMissing(err error) bool {
	var ge *gfcommon.Error
	if !errors.As(err, &ge) {
		return false
	}
	switch ge.HTTPReturnedStatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}

// systemID is a system's id as a client names it: its Id, else the last segment of its path.
func systemID(s *redfish.ComputerSystem) string {
	if s.ID != "" {
		return s.ID
	}
	p := strings.TrimSuffix(s.ODataID, "/")
	return p[strings.LastIndex(p, "/")+1:]
}

// pickSystem finds the node's system among the BMC's: the one whose id is want, or the only
// one when want is empty. Several systems and none named, or a name that is not there, is an
// invalid target listing the ids (permanent: the node must say which machine it is). bmclib
// addresses a system by its Name, so the chosen system's Name must be its own.
func pickSystem(systems []*redfish.ComputerSystem, want string) (*redfish.ComputerSystem, error) {
	// gofish reads a collection's members concurrently: order them by id.
	slices.SortFunc(systems, func(a, b *redfish.ComputerSystem) int { return strings.Compare(systemID(a), systemID(b)) })
	ids := make([]string, len(systems))
	for i, s := range systems {
		ids[i] = systemID(s)
	}
	switch {
	case len(systems) == 0:
		return nil, &errIncomplete{"the Systems collection has no member"}
	case want == "" && len(systems) == 1:
		return systems[0], nil
	case want == "":
		return nil, fmt.Errorf("%w: the BMC manages %d systems (%s); the node must name its systemId", ErrInvalidTarget, len(systems), strings.Join(ids, ", "))
	}
	i := slices.Index(ids, want)
	if i < 0 {
		return nil, fmt.Errorf("%w: the BMC has no system %q (it has %s)", ErrInvalidTarget, want, strings.Join(ids, ", "))
	}
	for j, s := range systems {
		if j != i && s.Name == systems[i].Name {
			return nil, fmt.Errorf("%w: systems %s and %s share the name %q, which bmclib addresses systems by", errNoDriver, ids[i], ids[j], s.Name)
		}
	}
	return systems[i], nil
}

// SystemIDs logs in to a Redfish BMC and lists the ids of the systems it manages, then logs
// out: enrollment's check that a node behind a multi-system BMC names its system. The error is
// an *Error, classified and scrubbed. IPMI has no systems to list: nil.
func (r *Runner) SystemIDs(ctx context.Context, t Target) ([]string, error) {
	if t.Protocol != Redfish {
		return nil, nil
	}
	rep := Report{Target: t.String()}
	scrub := newScrubber(t.Username, t.Password)
	if err := t.Validate(); err != nil {
		return nil, &Error{Step: StepOpen, Kind: ErrInvalidTarget, msg: scrub.clean(err.Error())}
	}
	t, err := r.guard(ctx, t)
	if err != nil {
		return nil, r.fail(ctx, t, &rep, err.(*Error))
	}
	g, ctx := newGate(ctx, r.Outbound, nil, 0)
	defer g.close()
	tm := r.timeouts()
	ctx, cancel := context.WithTimeout(ctx, tm.step)
	defer cancel()
	tlsCfg, err := tlsConfig(t)
	if err != nil {
		return nil, r.classified(StepOpen, err, scrub)
	}
	client := guardedHTTPClient(g, tm, tlsCfg)
	auth, err := redfishAuth(ctx, t, client)
	if err != nil {
		return nil, r.classified(StepOpen, err, scrub)
	}
	c, _, err := loginRedfish(ctx, t, auth, client)
	if err != nil {
		return nil, r.classified(StepOpen, err, scrub)
	}
	defer c.Logout()
	systems, err := c.Service.Systems()
	if err != nil {
		return nil, r.classified(StepOpen, err, scrub)
	}
	ids := make([]string, len(systems))
	for i, s := range systems {
		ids[i] = systemID(s)
	}
	slices.Sort(ids)
	return ids, nil
}
