package sim

import (
	"net/http"
	"regexp"
	"time"
)

// tagName is DigitalOcean's rule for tag names: letters, digits, colons, dashes and
// underscores, at most 255 characters.
var tagName = regexp.MustCompile(`^[A-Za-z0-9:_-]{1,255}$`)

// actionRecord is an action DigitalOcean reports for an asynchronous change (a droplet's
// create); it is in-progress until doneAt and completed after.
type actionRecord struct {
	id           int
	kind         string
	resourceID   int
	resourceType string
	region       string
	startedAt    time.Time
	doneAt       time.Time
}

// addAction records an action on a droplet and returns its id.
func (a *account) addAction(kind string, dropletID int, region string, started, done time.Time) int {
	if a.actions == nil {
		a.actions = map[int]*actionRecord{}
	}
	a.nextActionID++
	id := 2000000000 + a.nextActionID
	a.actions[id] = &actionRecord{id: id, kind: kind, resourceID: dropletID, resourceType: "droplet",
		region: region, startedAt: started, doneAt: done}
	return id
}

func (r *actionRecord) view(now time.Time) wireAction {
	out := wireAction{ID: r.id, Status: "in-progress", Type: r.kind, StartedAt: stamp(r.startedAt),
		ResourceID: r.resourceID, ResourceType: r.resourceType, Region: wireRegionOf(r.region), RegionSlug: r.region}
	if !now.Before(r.doneAt) {
		done := stamp(r.doneAt)
		out.Status, out.CompletedAt = "completed", &done
	}
	return out
}

type actionRoot struct {
	Action wireAction `json:"action"`
}

// getAction answers GET /v2/actions/{id}, which godo's Actions.Get polls.
func (s *Server) getAction(c *call) reply {
	id, valid := c.intPathValue("id")
	r := c.acct.actions[id]
	if !valid || r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, actionRoot{r.view(c.now)})
}

// baseURL is the scheme and host the request reached, so links are absolute URLs.
func (c *call) baseURL() string {
	return "http://" + c.r.Host
}
