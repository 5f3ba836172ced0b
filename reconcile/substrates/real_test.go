package substrates_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/provider/digitalocean/sim"
	"better-compute.dev/compute/reconcile/substrates"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/reconcile/substrates/kubetest"
	"better-compute.dev/compute/store"
)

// The TestReal... tests drive the reconciler against a real kube-apiserver: the simulator
// hands out its kubeconfig for every cluster (sim.Options.KubeAPIServer) and the reconciler
// opens it with substrates.KubeconfigClients, as in production. Without the binary they skip
// locally and fail in CI.

func TestMain(m *testing.M) { kubetest.Main(m) }

// newRealEnv is newEnv whose clusters are all the real API server.
func newRealEnv(t *testing.T, tenantID string) (*env, *kubetest.Server) {
	t.Helper()
	srv := kubetest.Start(t)
	e := newEnvSim(t, tenantID, func(o *sim.Options) {
		o.KubeAPIServer = &sim.KubeAPIServer{Server: srv.URL, CAPEM: srv.CAPEM, ClientCertPEM: srv.CertPEM, ClientKeyPEM: srv.KeyPEM}
	}, func(o *substrates.Options) { o.Kube = substrates.KubeconfigClients{} })
	return e, srv
}

// TestRealSubstrate: a created cluster's objects land in a real API server under our field
// manager alone (Apply entries only), labelled with the pool; bcd's service account can get a
// Node and nothing more; a resync writes nothing; the teardown removes what we made.
func TestRealSubstrate(t *testing.T) {
	e, srv := newRealEnv(t, "realco")
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" || len(sub.Objects) != 6 || len(sub.Conflicts) != 0 {
		t.Fatalf("substrate %s (%q) objects %v conflicts %v: want ready with 6 objects", sub.State, sub.LastError, sub.Objects, sub.Conflicts)
	}
	versions := map[string]string{}
	for _, o := range sub.Objects {
		obj, err := getObject(t, srv.Client, o.Kind, o.Namespace, o.Name)
		if err != nil {
			t.Fatalf("%s/%s/%s in the API server: %v", o.Kind, o.Namespace, o.Name, err)
		}
		if obj.GetLabels()[k8sapply.PoolLabel] != e.tn.PoolID || string(obj.GetUID()) != o.UID {
			t.Errorf("%s %s: labels %v uid %s, want the pool label and the recorded uid %s", o.Kind, o.Name, obj.GetLabels(), obj.GetUID(), o.UID)
		}
		for _, mf := range obj.GetManagedFields() {
			if mf.Manager != k8sapply.FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("%s %s: managed fields entry %s/%s, want only %s/Apply", o.Kind, o.Name, mf.Manager, mf.Operation, k8sapply.FieldManager)
			}
		}
		versions[o.Kind+"/"+o.Name] = obj.GetResourceVersion()
	}

	// bcd's identity: get on a Node is allowed (the node does not exist: NotFound, not
	// Forbidden); listing Nodes, reading Secrets and writing Nodes are not.
	ns := substrates.NamespaceName(e.tn.PoolID)
	bcd, err := srv.As("system:serviceaccount:"+ns+":"+substrates.ServiceAccountName, "system:serviceaccounts", "system:serviceaccounts:"+ns, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bcd.CoreV1().Nodes().Get(e.ctx, "no-such-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("bcd get node: %v, want NotFound (allowed)", err)
	}
	if _, err := bcd.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bcd list nodes: %v, want Forbidden", err)
	}
	if _, err := bcd.CoreV1().Secrets(ns).Get(e.ctx, substrates.SecretName, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bcd get its join secret through the API: %v, want Forbidden (it reads it from its environment)", err)
	}
	if err := bcd.CoreV1().Nodes().Delete(e.ctx, "no-such-node", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bcd delete node: %v, want Forbidden", err)
	}

	// The kubeconfig the script writes opens the same server.
	fromFile, err := substrates.KubeconfigClients{}.ForCluster(e.ctx, "script", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fromFile.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{}); err != nil {
		t.Errorf("the script's kubeconfig: %v", err)
	}

	// A resync with nothing changed writes nothing into the cluster.
	e.resync(t)
	for _, o := range e.substrate(t).Objects {
		obj, err := getObject(t, srv.Client, o.Kind, o.Namespace, o.Name)
		if err != nil || obj.GetResourceVersion() != versions[o.Kind+"/"+o.Name] {
			t.Errorf("%s %s: resourceVersion %v -> %v (%v): a resync wrote", o.Kind, o.Name, versions[o.Kind+"/"+o.Name], obj.GetResourceVersion(), err)
		}
	}

	// Teardown: the cluster we made is deleted at the provider; the objects go with it there.
	// On the real server (which stood in for it) they are still ours to inspect, so check only
	// the row and the provider.
	e.setPolicy(t, &v1.PoolPolicy{Flavors: flavors()})
	e.settle(t)
	if got := e.substrate(t); got.State != "deleted" {
		t.Errorf("after the teardown: %s (%q), want deleted", got.State, got.LastError)
	}
}

// TestRealAdoptForeignNamespace: on an adopted cluster (the real API server) whose namespace of
// our name is the tenant's, nothing is written into it, the DaemonSet is not made, the
// substrate is in error, and the cluster-scoped role and binding are not made either; the
// teardown removes only ours and leaves the tenant's namespace as it was.
func TestRealAdoptForeignNamespace(t *testing.T) {
	e, srv := newRealEnv(t, "realadopt")
	own, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: "tenant-prod", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "tenant-pool", Size: "s-2vcpu-4gb", Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := substrates.NamespaceName(e.tn.PoolID)
	theirs, err := srv.Client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"owner": "tenant"}}},
		metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	e.simNow.Advance(2 * sim.ClusterProvisionDelay)
	e.setPolicy(t, adoptPolicy(e.tn.AccountID, own.ID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "error" || !strings.Contains(sub.LastError, "namespace "+ns+" is not ours") || len(sub.Objects) != 0 {
		t.Fatalf("substrate %s (%q) objects %v: want error naming the foreign namespace, nothing applied", sub.State, sub.LastError, sub.Objects)
	}
	if secrets, err := srv.Client.CoreV1().Secrets(ns).List(e.ctx, metav1.ListOptions{}); err != nil || len(secrets.Items) != 0 {
		t.Errorf("secrets in the tenant's namespace: %v %v, want none", secrets.Items, err)
	}
	if dss, err := srv.Client.AppsV1().DaemonSets(ns).List(e.ctx, metav1.ListOptions{}); err != nil || len(dss.Items) != 0 {
		t.Errorf("daemon sets in the tenant's namespace: %v %v, want none", dss.Items, err)
	}
	if sas, err := srv.Client.CoreV1().ServiceAccounts(ns).List(e.ctx, metav1.ListOptions{}); err != nil || slices.ContainsFunc(sas.Items, func(sa corev1.ServiceAccount) bool { return sa.Name == substrates.ServiceAccountName }) {
		t.Errorf("service accounts in the tenant's namespace: %v %v, want no bcd", sas.Items, err)
	}
	if _, err := srv.Client.RbacV1().ClusterRoles().Get(e.ctx, substrates.NodeReaderName(e.tn.PoolID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node reader role: %v, want none made", err)
	}

	// Teardown leaves the tenant's namespace exactly as it was.
	e.setPolicy(t, &v1.PoolPolicy{Flavors: flavors()})
	e.settle(t)
	got, err := srv.Client.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != theirs.ResourceVersion || got.DeletionTimestamp != nil {
		t.Errorf("the tenant's namespace after the teardown: %+v %v, want unchanged", got, err)
	}
	if sub := e.substrate(t); sub.State != "deleted" {
		t.Errorf("after the teardown: %s (%q), want deleted", sub.State, sub.LastError)
	}
}

// TestRealAdoptTeardown: on an adopted cluster the teardown deletes what we applied (the
// cluster stays, so the objects must go one by one): DaemonSet, Secret, ServiceAccount, role and
// binding are gone and our namespace is terminating.
func TestRealAdoptTeardown(t *testing.T) {
	e, srv := newRealEnv(t, "realteardown")
	own, _, err := e.do.Kubernetes.Create(e.ctx, &godo.KubernetesClusterCreateRequest{
		Name: "tenant-prod", RegionSlug: "nyc3",
		NodePools: []*godo.KubernetesNodePoolCreateRequest{{Name: "tenant-pool", Size: "s-2vcpu-4gb", Count: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.simNow.Advance(2 * sim.ClusterProvisionDelay)
	e.setPolicy(t, adoptPolicy(e.tn.AccountID, own.ID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" || len(sub.Objects) != 6 {
		t.Fatalf("substrate %s (%q) objects %v: want ready with 6 objects", sub.State, sub.LastError, sub.Objects)
	}
	e.setPolicy(t, &v1.PoolPolicy{Flavors: flavors()})
	e.settle(t)
	if got := e.substrate(t); got.State != "deleted" {
		t.Fatalf("after the teardown: %s (%q), want deleted", got.State, got.LastError)
	}
	for _, o := range sub.Objects {
		obj, err := getObject(t, srv.Client, o.Kind, o.Namespace, o.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Errorf("%s %s: %v", o.Kind, o.Name, err)
		case o.Kind == "Namespace" && obj.GetDeletionTimestamp() != nil:
			// No controller manager runs to finish a namespace's deletion.
		default:
			t.Errorf("%s %s is still there after the teardown", o.Kind, o.Name)
		}
	}
}

// getObject reads one object of a kind the substrate applies.
func getObject(t *testing.T, cs k8sapply.Cluster, kind, ns, name string) (metav1.Object, error) {
	t.Helper()
	ctx := t.Context()
	get := metav1.GetOptions{}
	switch kind {
	case "Namespace":
		return cs.CoreV1().Namespaces().Get(ctx, name, get)
	case "Secret":
		return cs.CoreV1().Secrets(ns).Get(ctx, name, get)
	case "DaemonSet":
		return cs.AppsV1().DaemonSets(ns).Get(ctx, name, get)
	case "ServiceAccount":
		return cs.CoreV1().ServiceAccounts(ns).Get(ctx, name, get)
	case "ClusterRole":
		return cs.RbacV1().ClusterRoles().Get(ctx, name, get)
	case "ClusterRoleBinding":
		return cs.RbacV1().ClusterRoleBindings().Get(ctx, name, get)
	}
	t.Fatalf("kind %s not handled", kind)
	return nil, nil
}

// TestRealDaemonSetTakenIsNotReady / TestDaemonSetTakenIsNotReady: when the DaemonSet of our
// name is someone else's (the tenant replaced ours), the substrate is error, not ready, and
// their DaemonSet is left as it was; once they remove it, ours comes back and it is ready.
func TestRealDaemonSetTakenIsNotReady(t *testing.T) {
	e, srv := newRealEnv(t, "realds")
	daemonSetTaken(t, e, func(string) k8sapply.Cluster { return srv.Client })
}

func TestDaemonSetTakenIsNotReady(t *testing.T) {
	e := newEnv(t, "fakeds")
	daemonSetTaken(t, e, func(id string) k8sapply.Cluster { return e.kube.cluster(id) })
}

func daemonSetTaken(t *testing.T, e *env, clusterOf func(clusterID string) k8sapply.Cluster) {
	t.Helper()
	e.setPolicy(t, createPolicy(e.tn.AccountID))
	e.settle(t)
	sub := e.substrate(t)
	if sub.State != "ready" {
		t.Fatalf("substrate %s (%q), want ready", sub.State, sub.LastError)
	}
	cs := clusterOf(sub.ClusterID)
	ns := substrates.NamespaceName(e.tn.PoolID)
	if err := cs.AppsV1().DaemonSets(ns).Delete(e.ctx, substrates.DaemonSetName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: substrates.DaemonSetName, Namespace: ns, Labels: map[string]string{"owner": "tenant"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "theirs", Image: "registry.example/theirs:1"}}},
			},
		},
	}
	made, err := cs.AppsV1().DaemonSets(ns).Create(e.ctx, theirs, metav1.CreateOptions{FieldManager: "kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	e.resync(t)
	sub = e.substrate(t)
	if sub.State != "error" || !strings.Contains(sub.LastError, "DaemonSet/"+ns+"/"+substrates.DaemonSetName+" is not ours") {
		t.Errorf("substrate %s (%q): want error naming the DaemonSet", sub.State, sub.LastError)
	}
	if !slices.ContainsFunc(sub.Conflicts, func(c store.SubstrateConflict) bool { return c.Kind == "DaemonSet" }) {
		t.Errorf("conflicts %v: want the DaemonSet", sub.Conflicts)
	}
	got, err := cs.AppsV1().DaemonSets(ns).Get(e.ctx, substrates.DaemonSetName, metav1.GetOptions{})
	if err != nil || got.ResourceVersion != made.ResourceVersion || got.Labels[k8sapply.PoolLabel] != "" {
		t.Errorf("the tenant's DaemonSet changed: %+v %v", got, err)
	}
	if err := cs.AppsV1().DaemonSets(ns).Delete(e.ctx, substrates.DaemonSetName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.resync(t)
	if sub := e.substrate(t); sub.State != "ready" || len(sub.Conflicts) != 0 {
		t.Errorf("after the tenant removed theirs: %s (%q) conflicts %v, want ready", sub.State, sub.LastError, sub.Conflicts)
	}
}
