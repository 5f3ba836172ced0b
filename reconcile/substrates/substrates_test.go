package substrates_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/lifecycle"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/reconcile/substrates"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/store"
)

// TestCreatePath: a policy with cluster { create } makes one cluster named bc-<pool> with one
// node pool per flavor, applies the pool's objects once it runs, and archiving the pool
// deletes the cluster.
func TestCreatePath(t *testing.T) {
	e := newEnv(t, "acme")
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	if got := e.substrate(t).State; got != "pending" {
		t.Fatalf("right after the policy change the substrate is %s, want pending", got)
	}

	reconcileOnce(t, e)
	sub := e.substrate(t)
	if sub.State != "provisioning" || sub.ClusterID == "" || !sub.ClusterCreated {
		t.Fatalf("after one pass: %+v, want provisioning with a created cluster", sub)
	}
	e.settle(t)
	sub = e.substrate(t)
	if sub.State != "ready" || sub.LastError != "" {
		t.Fatalf("settled substrate %s (%q), want ready", sub.State, sub.LastError)
	}
	cs := e.clusters(t)
	if len(cs) != 1 || cs[0].Name != managed.ProviderName(e.tn.PoolID) || cs[0].ID != sub.ClusterID {
		t.Fatalf("clusters at the provider %v, want the one bc-<pool> cluster", names(cs))
	}
	wantPools := []string{substrates.NodePoolName(e.tn.PoolID, "big"), substrates.NodePoolName(e.tn.PoolID, "small")}
	got := e.nodePoolNames(t, sub.ClusterID)
	slices.Sort(got)
	if !slices.Equal(got, wantPools) {
		t.Errorf("node pools %v, want %v", got, wantPools)
	}
	if len(sub.Objects) != 6 || len(sub.Conflicts) != 0 {
		t.Errorf("objects %v conflicts %v: want 6 applied, none in conflict", sub.Objects, sub.Conflicts)
	}
	cluster := e.kube.cluster(sub.ClusterID)
	ns := substrates.NamespaceName(e.tn.PoolID)
	assertBcdRBAC(t, e, sub.ClusterID)
	ds, err := cluster.AppsV1().DaemonSets(ns).Get(e.ctx, substrates.DaemonSetName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("bcd's DaemonSet: %v", err)
	}
	if ok, why := k8sapply.Owned(ds, e.tn.PoolID); !ok {
		t.Errorf("the DaemonSet is not ours: %s", why)
	}
	if ds.Spec.Template.Spec.NodeSelector[k8sapply.PoolLabel] != e.tn.PoolID {
		t.Errorf("DaemonSet node selector %v: want our node pools only", ds.Spec.Template.Spec.NodeSelector)
	}
	secret, err := cluster.CoreV1().Secrets(ns).Get(e.ctx, substrates.SecretName, metav1.GetOptions{})
	if err != nil || secret.Labels[k8sapply.PoolLabel] != e.tn.PoolID || len(tokenOf(secret)) < 32 {
		t.Fatalf("join secret %v %v: want our label and a token", secret, err)
	}

	// The tenant reads it through the API.
	view, err := e.s.App.Substrates.GetSubstrate(e.tn.Ctx, &v1.GetSubstrateRequest{TenantId: e.tn.ID, PoolId: e.tn.PoolID})
	if err != nil {
		t.Fatal(err)
	}
	if view.GetState() != "ready" || view.GetClusterOrigin() != "created" || len(view.GetNodePools()) != 2 || view.GetNodePools()[0].GetProviderId() == "" {
		t.Errorf("substrate view %v: want ready, created, two node pools with provider ids", view)
	}

	// Another pass (the resync) changes nothing and makes nothing twice.
	e.resync(t)
	if n := len(e.clusters(t)); n != 1 {
		t.Errorf("%d clusters after the resync, want 1", n)
	}

	if _, err := e.s.App.Pools.ArchivePool(e.s.AdminCtx, &v1.ArchivePoolRequest{TenantId: e.tn.ID, PoolId: e.tn.PoolID}); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
	if n := len(e.clusters(t)); n != 0 {
		t.Errorf("%d clusters after the archive, want the created one deleted", n)
	}
	if sub := e.substrate(t); sub.State != "deleted" || sub.ClusterID != "" {
		t.Errorf("after the archive the substrate is %+v, want deleted", sub)
	}
}

// TestCreateAdoptsByName: a cluster named bc-<pool> that an earlier pass made (its answer
// lost) is adopted, not made again.
func TestCreateAdoptsByName(t *testing.T) {
	e := newEnv(t, "lost")
	prior, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: managed.ProviderName(e.tn.PoolID), RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: substrates.NodePoolName(e.tn.PoolID, "small"), Size: "s-1vcpu-2gb", Count: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" || sub.ClusterID != prior.ID || !sub.ClusterCreated {
		t.Fatalf("substrate %+v, want ready on the cluster found by name", sub)
	}
	if n := len(e.clusters(t)); n != 1 {
		t.Errorf("%d clusters, want 1: the retry made a duplicate", n)
	}
	if got := e.nodePoolNames(t, prior.ID); len(got) != 2 {
		t.Errorf("node pools %v: want the existing small pool kept and big added", got)
	}
}

// TestAdoptPath: adopting the tenant's cluster adds the flavors' node pools beside the tenant's
// own, never takes over an object of our name the tenant made (it is reported), and tearing
// down leaves the cluster, the tenant's node pool and the tenant's objects as they were.
func TestAdoptPath(t *testing.T) {
	e := newEnv(t, "globex")
	own, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: "tenant-prod", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "tenant-pool", Size: "s-2vcpu-4gb", Count: 3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The tenant's own objects, one of them under the name our join Secret would take.
	ns := substrates.NamespaceName(e.tn.PoolID)
	cluster := e.kube.cluster(own.ID)
	tenantSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: substrates.SecretName, Namespace: ns, Labels: map[string]string{"owner": "tenant"}},
		StringData: map[string]string{"token": "tenant value"}}
	if _, err := cluster.CoreV1().Secrets(ns).Create(e.ctx, tenantSecret, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-apps"}}, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	e.simNow.Advance(2 * sim.ClusterProvisionDelay)

	e.setPolicy(t, adoptPolicy(e.tn.AccountID, own.ID))
	e.settle(t)
	sub := e.substrate(t)
	// bcd would read the tenant's Secret: its DaemonSet is not applied and the substrate is
	// not ready, with the reason.
	if sub.State != "error" || !strings.Contains(sub.LastError, "bcd cannot run") || sub.ClusterID != own.ID || sub.ClusterCreated {
		t.Fatalf("substrate %+v (%q), want error (bcd cannot run) on the adopted cluster", sub.State, sub.LastError)
	}
	got := e.nodePoolNames(t, own.ID)
	slices.Sort(got)
	want := []string{substrates.NodePoolName(e.tn.PoolID, "big"), substrates.NodePoolName(e.tn.PoolID, "small"), "tenant-pool"}
	if !slices.Equal(got, want) {
		t.Errorf("node pools %v, want %v", got, want)
	}
	if len(sub.Conflicts) != 2 || sub.Conflicts[0].Kind != "Secret" || sub.Conflicts[0].Name != substrates.SecretName ||
		sub.Conflicts[1].Kind != "DaemonSet" || !strings.HasPrefix(sub.Conflicts[1].Reason, "not applied") {
		t.Errorf("conflicts %v: want the tenant's Secret reported and the DaemonSet not applied", sub.Conflicts)
	}
	if len(sub.Objects) != 4 || sub.Objects[0].Kind != "Namespace" {
		t.Errorf("objects %v: want the Namespace and bcd's RBAC applied", sub.Objects)
	}
	if _, err := cluster.AppsV1().DaemonSets(ns).Get(e.ctx, substrates.DaemonSetName, metav1.GetOptions{}); err == nil {
		t.Error("a DaemonSet reading the tenant's Secret was applied")
	}
	assertTenantSecret(t, e, own.ID)
	view, err := e.s.App.Substrates.GetSubstrate(e.tn.Ctx, &v1.GetSubstrateRequest{TenantId: e.tn.ID, PoolId: e.tn.PoolID})
	if err != nil || view.GetClusterOrigin() != "adopted" || len(view.GetConflicts()) != 2 {
		t.Errorf("substrate view %v %v: want adopted with two conflicts", view, err)
	}

	// A policy without a substrate tears down what we made, and only that.
	e.setPolicy(t, &v1.PoolPolicy{Flavors: flavors()})
	e.settle(t)
	if sub := e.substrate(t); sub.State != "deleted" {
		t.Fatalf("after the teardown the substrate is %s (%q), want deleted", sub.State, sub.LastError)
	}
	c, _, err := e.do.Kubernetes.Get(e.ctx, own.ID)
	if err != nil {
		t.Fatalf("the adopted cluster is gone: %v", err)
	}
	if got := e.nodePoolNames(t, c.ID); !slices.Equal(got, []string{"tenant-pool"}) {
		t.Errorf("node pools after teardown %v, want only the tenant's", got)
	}
	for _, np := range c.NodePools {
		if np.Name == "tenant-pool" && len(np.Nodes) != 3 {
			t.Errorf("the tenant's node pool has %d nodes, want its 3", len(np.Nodes))
		}
	}
	assertTenantSecret(t, e, own.ID)
	if _, err := cluster.CoreV1().Namespaces().Get(e.ctx, "tenant-apps", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant's namespace is gone: %v", err)
	}
	if _, err := cluster.AppsV1().DaemonSets(ns).Get(e.ctx, substrates.DaemonSetName, metav1.GetOptions{}); err == nil {
		t.Error("our DaemonSet is still there")
	}
	if _, err := cluster.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{}); err == nil {
		t.Error("our Namespace is still there")
	}
	if _, err := cluster.RbacV1().ClusterRoles().Get(e.ctx, substrates.NodeReaderName(e.tn.PoolID), metav1.GetOptions{}); err == nil {
		t.Error("bcd's ClusterRole is still there")
	}
	if _, err := cluster.RbacV1().ClusterRoleBindings().Get(e.ctx, substrates.NodeReaderName(e.tn.PoolID), metav1.GetOptions{}); err == nil {
		t.Error("bcd's ClusterRoleBinding is still there")
	}
}

// TestAdoptMissingCluster: adopting a cluster the account does not have is an error state
// with the reason, not a retry loop.
func TestAdoptMissingCluster(t *testing.T) {
	e := newEnv(t, "initech")
	e.setPolicy(t, adoptPolicy(e.tn.AccountID, "00000000-0000-4000-8000-000000000000"))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "error" || sub.LastError == "" {
		t.Errorf("substrate %s %q, want error with a reason", sub.State, sub.LastError)
	}
	if n := len(e.clusters(t)); n != 0 {
		t.Errorf("%d clusters made while adopting, want none", n)
	}
}

// assertTenantSecret checks the tenant's Secret of our name is as the tenant made it.
func assertTenantSecret(t *testing.T, e *env, clusterID string) {
	t.Helper()
	s, err := e.kube.cluster(clusterID).CoreV1().Secrets(substrates.NamespaceName(e.tn.PoolID)).Get(e.ctx, substrates.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the tenant's Secret is gone: %v", err)
	}
	if _, labelled := s.Labels[k8sapply.PoolLabel]; labelled || s.Labels["owner"] != "tenant" || s.StringData["token"] != "tenant value" {
		t.Errorf("the tenant's Secret was taken over: labels %v data %v", s.Labels, s.StringData)
	}
}

func tokenOf(s *corev1.Secret) string {
	if v, ok := s.StringData[substrates.SecretKeyToken]; ok {
		return v
	}
	return string(s.Data[substrates.SecretKeyToken])
}

func names(cs []*godo.KubernetesCluster) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// reconcileOnce runs the due items once, without moving any clock.
func reconcileOnce(t *testing.T, e *env) {
	t.Helper()
	if _, err := e.runner.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptForeignNamespace: when the namespace of our name on an adopted cluster belongs to
// someone else, nothing is written into it (no join Secret, no DaemonSet), all three are
// reported, and the substrate is not ready; once the tenant frees the name, the next pass
// converges.
func TestAdoptForeignNamespace(t *testing.T) {
	e := newEnv(t, "hooli")
	own, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: "tenant-prod", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "tenant-pool", Size: "s-2vcpu-4gb", Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := substrates.NamespaceName(e.tn.PoolID)
	cluster := e.kube.cluster(own.ID)
	if _, err := cluster.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"owner": "tenant"}}},
		metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	e.simNow.Advance(2 * sim.ClusterProvisionDelay)
	e.setPolicy(t, adoptPolicy(e.tn.AccountID, own.ID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "error" || !strings.Contains(sub.LastError, "namespace "+ns+" is not ours") {
		t.Fatalf("substrate %s (%q): want error naming the foreign namespace", sub.State, sub.LastError)
	}
	kinds := []string{}
	for _, c := range sub.Conflicts {
		kinds = append(kinds, c.Kind)
	}
	if !slices.Equal(kinds, []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret", "DaemonSet"}) || len(sub.Objects) != 0 {
		t.Errorf("conflicts %v objects %v: want all six reported, nothing applied", sub.Conflicts, sub.Objects)
	}
	if crs, err := cluster.RbacV1().ClusterRoles().List(e.ctx, metav1.ListOptions{}); err != nil || len(crs.Items) != 0 {
		t.Errorf("cluster roles %v %v: want none made for a namespace that is not ours", crs, err)
	}
	secrets, err := cluster.CoreV1().Secrets(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil || len(secrets.Items) != 0 {
		t.Errorf("secrets in the foreign namespace: %v %v, want none", secrets, err)
	}
	dss, err := cluster.AppsV1().DaemonSets(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil || len(dss.Items) != 0 {
		t.Errorf("daemon sets in the foreign namespace: %v %v, want none", dss, err)
	}
	got, err := cluster.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
	if err != nil || got.Labels["owner"] != "tenant" || got.Labels[k8sapply.PoolLabel] != "" {
		t.Errorf("the tenant's namespace changed: %+v %v", got, err)
	}

	if got := substrateEvents(t, e, sub.ID); !slices.Equal(got, []string{lifecycle.EventSubstrateCreated, lifecycle.EventSubstrateError}) {
		t.Errorf("events %v: want created then error", got)
	}

	// The tenant frees the name: the resync applies everything and the substrate is ready.
	if err := cluster.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.resync(t)
	if sub := e.substrate(t); sub.State != "ready" || len(sub.Objects) != 6 || len(sub.Conflicts) != 0 {
		t.Errorf("after the name was freed: %s (%q) objects %v conflicts %v, want ready with 6 objects", sub.State, sub.LastError, sub.Objects, sub.Conflicts)
	}
	if got := substrateEvents(t, e, sub.ID); !slices.Equal(got, []string{lifecycle.EventSubstrateCreated, lifecycle.EventSubstrateError, lifecycle.EventSubstrateReady}) {
		t.Errorf("events %v: want created, error, then ready", got)
	}
}

// substrateEvents lists the types of a substrate's own events (its node pools' aside: see
// TestEventsFollowTheCluster), oldest first.
func substrateEvents(t *testing.T, e *env, substrateID string) []string {
	t.Helper()
	evs, err := store.ListEvents(e.ctx, e.s.App.DB.Q(), e.tn.ID, 0, 1000, substrateID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if !strings.HasPrefix(ev.Type, "poolSubstrate.nodePool.") {
			out = append(out, ev.Type)
		}
	}
	return out
}

// assertBcdRBAC: bcd runs as its own service account, bound to a cluster role that can only
// get Nodes, all labelled with the pool.
func assertBcdRBAC(t *testing.T, e *env, clusterID string) {
	t.Helper()
	cluster := e.kube.cluster(clusterID)
	ns := substrates.NamespaceName(e.tn.PoolID)
	ds, err := cluster.AppsV1().DaemonSets(ns).Get(e.ctx, substrates.DaemonSetName, metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.ServiceAccountName != substrates.ServiceAccountName {
		t.Errorf("DaemonSet %v %v: want it to run as %s", ds, err, substrates.ServiceAccountName)
	}
	sa, err := cluster.CoreV1().ServiceAccounts(ns).Get(e.ctx, substrates.ServiceAccountName, metav1.GetOptions{})
	if err != nil || sa.Labels[k8sapply.PoolLabel] != e.tn.PoolID {
		t.Errorf("service account %v %v: want ours", sa, err)
	}
	name := substrates.NodeReaderName(e.tn.PoolID)
	cr, err := cluster.RbacV1().ClusterRoles().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil || cr.Labels[k8sapply.PoolLabel] != e.tn.PoolID {
		t.Fatalf("cluster role %v %v: want ours", cr, err)
	}
	if len(cr.Rules) != 1 || !slices.Equal(cr.Rules[0].Resources, []string{"nodes"}) || !slices.Equal(cr.Rules[0].Verbs, []string{"get"}) ||
		!slices.Equal(cr.Rules[0].APIGroups, []string{""}) || len(cr.Rules[0].NonResourceURLs) != 0 {
		t.Errorf("cluster role rules %+v: want get on nodes only", cr.Rules)
	}
	crb, err := cluster.RbacV1().ClusterRoleBindings().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != name || crb.RoleRef.Kind != "ClusterRole" || len(crb.Subjects) != 1 ||
		crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != substrates.ServiceAccountName || crb.Subjects[0].Namespace != ns ||
		crb.Labels[k8sapply.PoolLabel] != e.tn.PoolID {
		t.Errorf("cluster role binding %+v %v: want ours, binding the role to bcd's service account only", crb, err)
	}
}
