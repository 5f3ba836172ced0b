package sim

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/godo"
)

// Managed Kubernetes (DOKS) as godo v1.237 calls it: clusters, their node pools and the
// kubeconfig. A cluster is created "provisioning" and is "running" ClusterProvisionDelay later;
// a node is "provisioning" for NodeProvisionDelay after it was added (with its pool, or by a
// resize). Both are computed from the clock when read, like every other transition here.
const (
	// ClusterProvisionDelay is how long a new cluster stays provisioning.
	ClusterProvisionDelay = 3 * time.Second
	// NodeProvisionDelay is how long a new node stays provisioning.
	NodeProvisionDelay = 2 * time.Second
	// DefaultKubernetesVersion is what "latest" (or no version) resolves to.
	DefaultKubernetesVersion = "1.33.1-do.0"
	// maxNodesPerPool is DigitalOcean's bound on a fixed-size node pool.
	maxNodesPerPool = 512
)

var (
	// kubernetesVersions are the version slugs a cluster may be created with.
	kubernetesVersions = map[string]bool{"1.31.9-do.0": true, "1.32.5-do.0": true, DefaultKubernetesVersion: true}
	// clusterName and nodePoolName are the names the API accepts (node names derive from them).
	clusterName  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,253}[a-z0-9])?$`)
	nodePoolName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,253}[a-z0-9])?$`)
	sizeSlug     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

// kube holds the clusters of every account. It lives in routeKubernetes' closures, so the
// family needs no field of Server or account; every handler runs under Server.mu like the rest.
type kube struct {
	s        *Server
	accounts map[*account]map[string]*clusterRecord
}

// clusterRecord is a stored cluster; its status is derived from createdAt when read.
type clusterRecord struct {
	seq       int
	c         godo.KubernetesCluster // without node pools and status
	createdAt time.Time
	pools     map[string]*nodePoolRecord
	poolSeq   int
	// credential is the bearer token its kubeconfig carries; caPEM the API server's
	// (self-signed) certificate it trusts.
	credential string
	caPEM      string
}

type nodePoolRecord struct {
	seq   int
	np    godo.KubernetesNodePool // without nodes
	nodes []*nodeRecord
}

type nodeRecord struct {
	n       godo.KubernetesNode // without status
	readyAt time.Time
}

type clusterRoot struct {
	Cluster godo.KubernetesCluster `json:"kubernetes_cluster"`
}

type clustersRoot struct {
	Clusters []godo.KubernetesCluster `json:"kubernetes_clusters"`
	Links    *godo.Links              `json:"links"`
	Meta     *godo.Meta               `json:"meta"`
}

type nodePoolRoot struct {
	NodePool godo.KubernetesNodePool `json:"node_pool"`
}

type nodePoolsRoot struct {
	NodePools []godo.KubernetesNodePool `json:"node_pools"`
	Links     *godo.Links               `json:"links"`
}

func (s *Server) routeKubernetes() {
	k := &kube{s: s, accounts: map[*account]map[string]*clusterRecord{}}
	s.route("POST /v2/kubernetes/clusters", k.createCluster)
	s.route("GET /v2/kubernetes/clusters", k.listClusters)
	s.route("GET /v2/kubernetes/clusters/{id}", k.getCluster)
	s.route("DELETE /v2/kubernetes/clusters/{id}", k.deleteCluster)
	s.route("GET /v2/kubernetes/clusters/{id}/kubeconfig", k.kubeconfig)
	s.route("GET /v2/kubernetes/clusters/{id}/node_pools", k.listNodePools)
	s.route("POST /v2/kubernetes/clusters/{id}/node_pools", k.createNodePool)
	s.route("GET /v2/kubernetes/clusters/{id}/node_pools/{pool}", k.getNodePool)
	s.route("PUT /v2/kubernetes/clusters/{id}/node_pools/{pool}", k.updateNodePool)
	s.route("DELETE /v2/kubernetes/clusters/{id}/node_pools/{pool}", k.deleteNodePool)
}

// clustersOf returns the account's clusters, making the map on first use.
func (k *kube) clustersOf(a *account) map[string]*clusterRecord {
	m := k.accounts[a]
	if m == nil {
		m = map[string]*clusterRecord{}
		k.accounts[a] = m
	}
	return m
}

// cluster returns the cluster named by the path, or nil.
func (k *kube) cluster(c *call) *clusterRecord {
	return k.clustersOf(c.acct)[c.r.PathValue("id")]
}

func (r *clusterRecord) view(now time.Time) godo.KubernetesCluster {
	v := r.c
	v.Status = &godo.KubernetesClusterStatus{State: godo.KubernetesClusterStatusRunning}
	if now.Before(r.createdAt.Add(ClusterProvisionDelay)) {
		v.Status = &godo.KubernetesClusterStatus{State: godo.KubernetesClusterStatusProvisioning, Message: "provisioning"}
	}
	v.NodePools = nil
	for _, p := range sortedBySeq(r.pools, func(p *nodePoolRecord) int { return p.seq }) {
		np := p.view(now)
		v.NodePools = append(v.NodePools, &np)
	}
	return v
}

func (p *nodePoolRecord) view(now time.Time) godo.KubernetesNodePool {
	v := p.np
	v.Count = len(p.nodes)
	v.Nodes = nil
	for _, n := range p.nodes {
		node := n.n
		state := "running"
		if now.Before(n.readyAt) {
			state = "provisioning"
		}
		node.Status = &godo.KubernetesNodeStatus{State: state}
		v.Nodes = append(v.Nodes, &node)
	}
	return v
}

// resize adds or removes nodes (newest first) until the pool has count.
func (k *kube) resize(p *nodePoolRecord, count int, now time.Time) {
	for len(p.nodes) < count {
		k.s.nextDropletID++
		p.nodes = append(p.nodes, &nodeRecord{
			n: godo.KubernetesNode{ID: newUUID(), Name: p.np.Name + "-" + randomSuffix(5),
				DropletID: strconv.Itoa(k.s.nextDropletID), CreatedAt: now.UTC(), UpdatedAt: now.UTC()},
			readyAt: now.Add(NodeProvisionDelay),
		})
	}
	p.nodes = p.nodes[:count]
}

// validNodePool checks a node pool request against the cluster's other pools.
func validNodePool(req *godo.KubernetesNodePoolCreateRequest, taken func(string) bool) *apiError {
	switch {
	case req == nil:
		return errInvalid("node pool is required")
	case !nodePoolName.MatchString(req.Name):
		return errInvalid("node pool name %q is not valid", req.Name)
	case taken(req.Name):
		return errInvalid("a node pool named %q already exists in this cluster", req.Name)
	case !sizeSlug.MatchString(req.Size):
		return errInvalid("node pool size %q is not valid", req.Size)
	case req.AutoScale:
		return errInvalid("auto-scaled node pools are not simulated")
	case req.Count < 1 || req.Count > maxNodesPerPool:
		return errInvalid("node pool count must be between 1 and %d", maxNodesPerPool)
	}
	return nil
}

func (k *kube) addNodePool(r *clusterRecord, req *godo.KubernetesNodePoolCreateRequest, now time.Time) *nodePoolRecord {
	r.poolSeq++
	p := &nodePoolRecord{seq: r.poolSeq, np: godo.KubernetesNodePool{
		ID: newUUID(), Name: req.Name, Size: req.Size, Tags: req.Tags, Labels: req.Labels, Taints: req.Taints,
	}}
	k.resize(p, req.Count, now)
	r.pools[p.np.ID] = p
	return p
}

func (k *kube) createCluster(c *call) reply {
	var req godo.KubernetesClusterCreateRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	clusters := k.clustersOf(c.acct)
	region := strings.ToLower(req.RegionSlug)
	version := req.VersionSlug
	if version == "" || version == "latest" {
		version = DefaultKubernetesVersion
	}
	switch {
	case !clusterName.MatchString(req.Name):
		return fail(errInvalid("name %q is not valid", req.Name))
	case regions[region] == "":
		return fail(errInvalid("region %q is not available", req.RegionSlug))
	case !kubernetesVersions[version]:
		return fail(errInvalid("version %q is not available", req.VersionSlug))
	case len(req.NodePools) == 0:
		return fail(errInvalid("at least one node pool is required"))
	}
	for _, other := range clusters {
		if other.c.Name == req.Name {
			return fail(errInvalid("a cluster named %q already exists", req.Name))
		}
	}
	seen := map[string]bool{}
	for _, np := range req.NodePools {
		if err := validNodePool(np, func(n string) bool { return seen[n] }); err != nil {
			return fail(err)
		}
		seen[np.Name] = true
	}
	vpc := c.acct.defaultVPC(region)
	id := newUUID()
	caPEM, _, err := SelfSignedCertificate(id + ".k8s.ondigitalocean.com")
	if err != nil {
		return fail(errServer(http.StatusInternalServerError))
	}
	rec := &clusterRecord{seq: c.acct.next(), createdAt: c.now, pools: map[string]*nodePoolRecord{}, credential: randomSuffix(40), caPEM: caPEM,
		c: godo.KubernetesCluster{
			ID: id, Name: req.Name, RegionSlug: region, VersionSlug: version, Tags: req.Tags,
			ClusterSubnet: "10.244.0.0/16", ServiceSubnet: "10.245.0.0/16", Endpoint: "https://" + id + ".k8s.ondigitalocean.com",
			CreatedAt: c.now.UTC(), UpdatedAt: c.now.UTC(),
		}}
	if real := k.s.opts.KubeAPIServer; real != nil {
		rec.c.Endpoint = real.Server
	}
	if vpc != nil {
		rec.c.VPCUUID = vpc.vpc.ID
	}
	for _, np := range req.NodePools {
		k.addNodePool(rec, np, c.now)
	}
	clusters[id] = rec
	return ok(http.StatusCreated, clusterRoot{rec.view(c.now)})
}

func (k *kube) listClusters(c *call) reply {
	all := sortedBySeq(k.clustersOf(c.acct), func(r *clusterRecord) int { return r.seq })
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := make([]godo.KubernetesCluster, 0, p.hi-p.lo)
	for _, r := range all[p.lo:p.hi] {
		page = append(page, r.view(c.now))
	}
	return ok(http.StatusOK, clustersRoot{Clusters: page, Links: p.links, Meta: p.meta})
}

func (k *kube) getCluster(c *call) reply {
	r := k.cluster(c)
	if r == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, clusterRoot{r.view(c.now)})
}

// deleteCluster removes the cluster and its node pools at once (the real API takes a while;
// nothing here depends on watching it go).
func (k *kube) deleteCluster(c *call) reply {
	if k.cluster(c) == nil {
		return fail(errNotFound())
	}
	delete(k.clustersOf(c.acct), c.r.PathValue("id"))
	return ok(http.StatusNoContent, nil)
}

// kubeconfig answers the cluster's kubeconfig. It is sent as JSON, which is YAML too: godo
// hands the body over as bytes and every kubeconfig loader reads either.
func (k *kube) kubeconfig(c *call) reply {
	r := k.cluster(c)
	if r == nil {
		return fail(errNotFound())
	}
	name := "do-" + r.c.RegionSlug + "-" + r.c.Name
	ca := base64.StdEncoding.EncodeToString([]byte(r.caPEM))
	user := map[string]any{"token": r.credential}
	if real := k.s.opts.KubeAPIServer; real != nil {
		ca = base64.StdEncoding.EncodeToString(real.CAPEM)
		user = map[string]any{"token": real.Token}
		if real.Token == "" {
			user = map[string]any{
				"client-certificate-data": base64.StdEncoding.EncodeToString(real.ClientCertPEM),
				"client-key-data":         base64.StdEncoding.EncodeToString(real.ClientKeyPEM)}
		}
	}
	return ok(http.StatusOK, map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": name,
		"clusters": []any{map[string]any{"name": name, "cluster": map[string]any{
			"server": r.c.Endpoint, "certificate-authority-data": ca}}},
		"users": []any{map[string]any{"name": name + "-admin", "user": user}},
		"contexts": []any{map[string]any{"name": name, "context": map[string]any{
			"cluster": name, "user": name + "-admin"}}},
	})
}

func (k *kube) listNodePools(c *call) reply {
	r := k.cluster(c)
	if r == nil {
		return fail(errNotFound())
	}
	all := sortedBySeq(r.pools, func(p *nodePoolRecord) int { return p.seq })
	p, err := paginate(c.r, len(all))
	if err != nil {
		return fail(err)
	}
	page := make([]godo.KubernetesNodePool, 0, p.hi-p.lo)
	for _, np := range all[p.lo:p.hi] {
		page = append(page, np.view(c.now))
	}
	return ok(http.StatusOK, nodePoolsRoot{NodePools: page, Links: p.links})
}

func (k *kube) createNodePool(c *call) reply {
	r := k.cluster(c)
	if r == nil {
		return fail(errNotFound())
	}
	var req godo.KubernetesNodePoolCreateRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	if err := validNodePool(&req, func(n string) bool { return r.poolNamed(n) != nil }); err != nil {
		return fail(err)
	}
	p := k.addNodePool(r, &req, c.now)
	return ok(http.StatusCreated, nodePoolRoot{p.view(c.now)})
}

func (r *clusterRecord) poolNamed(name string) *nodePoolRecord {
	for _, p := range r.pools {
		if p.np.Name == name {
			return p
		}
	}
	return nil
}

func (k *kube) getNodePool(c *call) reply {
	r := k.cluster(c)
	if r == nil || r.pools[c.r.PathValue("pool")] == nil {
		return fail(errNotFound())
	}
	return ok(http.StatusOK, nodePoolRoot{r.pools[c.r.PathValue("pool")].view(c.now)})
}

// updateNodePool takes the name (required, as the real API wants it), count, tags and labels.
func (k *kube) updateNodePool(c *call) reply {
	r := k.cluster(c)
	if r == nil || r.pools[c.r.PathValue("pool")] == nil {
		return fail(errNotFound())
	}
	p := r.pools[c.r.PathValue("pool")]
	var req godo.KubernetesNodePoolUpdateRequest
	if err := c.decode(&req); err != nil {
		return fail(err)
	}
	switch {
	case req.Name == "":
		return fail(errInvalid("name is required"))
	case req.Name != p.np.Name && r.poolNamed(req.Name) != nil:
		return fail(errInvalid("a node pool named %q already exists in this cluster", req.Name))
	case !nodePoolName.MatchString(req.Name):
		return fail(errInvalid("node pool name %q is not valid", req.Name))
	case req.Count != nil && (*req.Count < 1 || *req.Count > maxNodesPerPool):
		return fail(errInvalid("node pool count must be between 1 and %d", maxNodesPerPool))
	}
	p.np.Name = req.Name
	if req.Count != nil {
		k.resize(p, *req.Count, c.now)
	}
	if req.Tags != nil {
		p.np.Tags = req.Tags
	}
	if req.Labels != nil {
		p.np.Labels = req.Labels
	}
	return ok(http.StatusAccepted, nodePoolRoot{p.view(c.now)})
}

func (k *kube) deleteNodePool(c *call) reply {
	r := k.cluster(c)
	if r == nil || r.pools[c.r.PathValue("pool")] == nil {
		return fail(errNotFound())
	}
	delete(r.pools, c.r.PathValue("pool"))
	return ok(http.StatusNoContent, nil)
}

// randomSuffix returns n random lowercase letters and digits (node name suffixes, credentials).
func randomSuffix(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("sim: random: %v", err))
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
