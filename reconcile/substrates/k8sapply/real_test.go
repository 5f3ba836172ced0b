package k8sapply_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"better-compute.dev/compute/reconcile/substrates/k8sapply/k8sfake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"better-compute.dev/compute/reconcile/substrates/k8sapply"
	"better-compute.dev/compute/reconcile/substrates/kubetest"
)

// The tests named TestReal... run against a real kube-apiserver (kubetest); without the binary
// they skip locally and fail in CI.

func TestMain(m *testing.M) { kubetest.Main(m) }

// ourEntries returns our field manager's managedFields entries by operation.
func ourEntries(mfs []metav1.ManagedFieldsEntry) map[metav1.ManagedFieldsOperationType]int {
	out := map[metav1.ManagedFieldsOperationType]int{}
	for _, mf := range mfs {
		if mf.Manager == k8sapply.FieldManager {
			out[mf.Operation]++
		}
	}
	return out
}

func realDaemonSet(ns string, env ...string) *appsv1ac.DaemonSetApplyConfiguration {
	labels := map[string]string{"app": "bcd", k8sapply.PoolLabel: pool}
	c := corev1ac.Container().WithName("bcd").WithImage("registry.example/bcd:1")
	for _, e := range env {
		c = c.WithEnv(corev1ac.EnvVar().WithName(e).WithValue("1"))
	}
	return appsv1ac.DaemonSet("bcd", ns).WithLabels(labels).WithSpec(appsv1ac.DaemonSetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "bcd"})).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "bcd"}).
			WithSpec(corev1ac.PodSpec().WithContainers(c))))
}

// TestRealFirstWriteIsApply: on a real API server the first write is an apply (our only
// managedFields entry is an Apply, no Update), a label and a container env var a later
// manifest stops setting are removed, and re-applying the same manifest changes nothing (the
// resourceVersion stays).
func TestRealFirstWriteIsApply(t *testing.T) {
	srv := kubetest.Start(t)
	ctx := t.Context()
	a := k8sapply.Applier{Client: srv.Client, PoolID: pool}
	const ns = "bc-real-first-write"
	if out, err := a.Namespace(ctx, ourNamespace(ns).WithLabels(map[string]string{"tier": "system"})); err != nil || !out.Applied || out.UID == "" {
		t.Fatalf("first write %+v %v", out, err)
	}
	if out, err := a.DaemonSet(ctx, realDaemonSet(ns, "KEEP", "DROP")); err != nil || !out.Applied {
		t.Fatalf("first daemon set write %+v %v", out, err)
	}
	got, err := srv.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := ourEntries(got.ManagedFields); e[metav1.ManagedFieldsOperationApply] != 1 || e[metav1.ManagedFieldsOperationUpdate] != 0 || len(got.ManagedFields) != 1 {
		t.Errorf("managed fields %+v: want our Apply entry alone", got.ManagedFields)
	}
	if got.Labels["tier"] != "system" {
		t.Fatalf("labels %v: the first manifest did not land", got.Labels)
	}

	if out, err := a.Namespace(ctx, ourNamespace(ns)); err != nil || !out.Applied {
		t.Fatalf("second write %+v %v", out, err)
	}
	if out, err := a.DaemonSet(ctx, realDaemonSet(ns, "KEEP")); err != nil || !out.Applied {
		t.Fatalf("second daemon set write %+v %v", out, err)
	}
	got, _ = srv.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if _, ok := got.Labels["tier"]; ok || got.Labels[k8sapply.PoolLabel] != pool {
		t.Errorf("labels %v: want tier removed and the pool label kept", got.Labels)
	}
	ds, err := srv.Client.AppsV1().DaemonSets(ns).Get(ctx, "bcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := ds.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "KEEP" {
		t.Errorf("env %v: want only KEEP (DROP left the manifest)", env)
	}

	// The same manifests again: no write.
	nsVersion, dsVersion := got.ResourceVersion, ds.ResourceVersion
	if _, err := a.Namespace(ctx, ourNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DaemonSet(ctx, realDaemonSet(ns, "KEEP")); err != nil {
		t.Fatal(err)
	}
	got, _ = srv.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	ds, _ = srv.Client.AppsV1().DaemonSets(ns).Get(ctx, "bcd", metav1.GetOptions{})
	if got.ResourceVersion != nsVersion || ds.ResourceVersion != dsVersion {
		t.Errorf("a no-op re-apply wrote: namespace %s -> %s, daemon set %s -> %s", nsVersion, got.ResourceVersion, dsVersion, ds.ResourceVersion)
	}
}

// TestRealNoTakeover: objects of our names made by someone else (no label, another pool's
// label, our label but another field manager) are reported, left exactly as they were (same
// resourceVersion) and never deleted.
func TestRealNoTakeover(t *testing.T) {
	srv := kubetest.Start(t)
	ctx := t.Context()
	a := k8sapply.Applier{Client: srv.Client, PoolID: pool}
	run := realRun()
	cases := map[string]map[string]string{
		"bc-real-theirs-nolabel" + run:   {"team": "tenant"},
		"bc-real-theirs-otherpool" + run: {k8sapply.PoolLabel: "pool_someoneelse"},
		"bc-real-theirs-ourlabel" + run:  {k8sapply.PoolLabel: pool},
	}
	for name, labels := range cases {
		theirs, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
			metav1.CreateOptions{FieldManager: "kubectl"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := a.Namespace(ctx, ourNamespace(name))
		if err != nil || out.Applied || out.Conflict == "" {
			t.Errorf("%s: outcome %+v %v, want a conflict", name, out, err)
		}
		gone, why, err := a.Remove(ctx, out.Ref)
		if err != nil || gone || why == "" {
			t.Errorf("%s: remove gone %v why %q err %v: want it left alone", name, gone, why, err)
		}
		got, err := srv.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.ResourceVersion != theirs.ResourceVersion || got.DeletionTimestamp != nil {
			t.Errorf("%s: the tenant's namespace changed or went: %+v %v", name, got, err)
		}
	}
}

// runs counts the runs of the real-server tests in this process. The API server lives as long
// as the process and a namespace once made never goes (without a controller manager a deleted
// namespace stays Terminating), so a test run again (-count) names its namespaces anew.
var runs atomic.Int64

// realRun is the suffix of this run's names: empty the first time, "-2" and on after.
func realRun() string {
	if n := runs.Add(1); n > 1 {
		return fmt.Sprintf("-%d", n)
	}
	return ""
}

// racyNamespaces makes the tenant's namespace in the instant between our read (which it
// answers NotFound) and our first write: the race the first write must not win.
type racyClient struct {
	k8sapply.Cluster
	theirs *corev1.Namespace
	once   *sync.Once
}

func (c racyClient) CoreV1() corev1client.CoreV1Interface {
	return racyCore{CoreV1Interface: c.Cluster.CoreV1(), c: c}
}

type racyCore struct {
	corev1client.CoreV1Interface
	c racyClient
}

func (r racyCore) Namespaces() corev1client.NamespaceInterface {
	return racyNamespaces{NamespaceInterface: r.CoreV1Interface.Namespaces(), c: r.c}
}

type racyNamespaces struct {
	corev1client.NamespaceInterface
	c racyClient
}

func (n racyNamespaces) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error) {
	raced := false
	var err error
	n.c.once.Do(func() {
		raced = true
		_, err = n.NamespaceInterface.Create(ctx, n.c.theirs, metav1.CreateOptions{FieldManager: "kubectl"})
	})
	if err != nil {
		return nil, err
	}
	if raced {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return n.NamespaceInterface.Get(ctx, name, opts)
}

// TestRealRaceNeverTakesOver: when the tenant makes the name between our read and our first
// write, the namespace stays theirs: with a field of a different value the apply is refused,
// with none it merges and is undone at once, leaving their labels only and no entry of ours.
func TestRealRaceNeverTakesOver(t *testing.T) {
	raceNeverTakesOver(t, kubetest.Start(t).Client, "real"+realRun())
}

// TestRaceNeverTakesOver is the same race on the field-managed fake cluster (k8sfake).
func TestRaceNeverTakesOver(t *testing.T) {
	raceNeverTakesOver(t, k8sfake.New(), "fake")
}

func raceNeverTakesOver(t *testing.T, cs k8sapply.Cluster, tag string) {
	ctx := t.Context()
	cases := map[string]map[string]string{
		"bc-" + tag + "-race-differs": {"team": "tenant", "app": "theirs"}, // ourNamespace sets app=bcd
		"bc-" + tag + "-race-merges":  {"team": "tenant"},
	}
	for name, labels := range cases {
		theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		a := k8sapply.Applier{Client: racyClient{Cluster: cs, theirs: theirs, once: &sync.Once{}}, PoolID: pool}
		out, err := a.Namespace(ctx, ourNamespace(name))
		if err != nil || out.Applied || out.Conflict == "" {
			t.Errorf("%s: outcome %+v %v, want a conflict", name, out, err)
		}
		got, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(got.Labels, "kubernetes.io/metadata.name") // a real API server labels every namespace with its name
		if len(got.Labels) != len(labels) || got.Labels["team"] != "tenant" || got.Labels[k8sapply.PoolLabel] != "" {
			t.Errorf("%s: labels %v, want the tenant's %v only", name, got.Labels, labels)
		}
		if e := ourEntries(got.ManagedFields); len(e) != 0 {
			t.Errorf("%s: managed fields %+v keep an entry of ours", name, got.ManagedFields)
		}
		if ok, _ := k8sapply.Owned(got, pool); ok {
			t.Errorf("%s: the tenant's namespace reads as ours", name)
		}
	}
}

// TestRealRemove: what we applied is deleted (a cluster role at once; a namespace enters
// Terminating, which only a controller manager would finish), and an absent object is gone.
func TestRealRemove(t *testing.T) {
	srv := kubetest.Start(t)
	ctx := t.Context()
	a := k8sapply.Applier{Client: srv.Client, PoolID: pool}
	role := rbacv1ac.ClusterRole("bc-real-remove").WithLabels(map[string]string{k8sapply.PoolLabel: pool}).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("nodes").WithVerbs("get"))
	out, err := a.ClusterRole(ctx, role)
	if err != nil || !out.Applied {
		t.Fatalf("cluster role %+v %v", out, err)
	}
	if gone, why, err := a.Remove(ctx, out.Ref); err != nil || !gone {
		t.Fatalf("remove: %v %q %v, want gone", gone, why, err)
	}
	if _, err := srv.Client.RbacV1().ClusterRoles().Get(ctx, "bc-real-remove", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the cluster role is still there: %v", err)
	}
	nsOut, err := a.Namespace(ctx, ourNamespace("bc-real-remove"))
	if err != nil || !nsOut.Applied {
		t.Fatalf("namespace %+v %v", nsOut, err)
	}
	if gone, _, err := a.Remove(ctx, nsOut.Ref); err != nil || !gone {
		t.Fatalf("remove namespace: %v %v", gone, err)
	}
	ns, err := srv.Client.CoreV1().Namespaces().Get(ctx, "bc-real-remove", metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("the namespace is neither gone nor terminating: %+v", ns.Status)
	}
	if gone, _, err := a.Remove(ctx, k8sapply.Ref{Kind: "DaemonSet", Namespace: "default", Name: "bc-never-made"}); err != nil || !gone {
		t.Errorf("remove of an absent object: %v %v, want gone", gone, err)
	}
}
