package k8sapply_test

import (
	"testing"

	"better-compute.dev/compute/reconcile/substrates/k8sapply/k8sfake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"better-compute.dev/compute/reconcile/substrates/k8sapply"
)

const pool = "pool_01j0000000000000000000test"

func ourNamespace(name string) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(name).WithLabels(map[string]string{k8sapply.PoolLabel: pool, "app": "bcd"})
}

// TestEnsureCreatesThenApplies: a free name is made by an apply under our field manager, then
// applied again.
func TestEnsureCreatesThenApplies(t *testing.T) {
	t.Parallel()
	cs := k8sfake.New()
	a := k8sapply.Applier{Client: cs, PoolID: pool}
	out, err := a.Namespace(t.Context(), ourNamespace("bc-system"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Conflict != "" || !out.Applied {
		t.Fatalf("outcome %+v: want applied", out)
	}
	ns, err := cs.CoreV1().Namespaces().Get(t.Context(), "bc-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := k8sapply.Owned(ns, pool); !ok {
		t.Errorf("the namespace we made is not ours: %s (managed fields %v)", why, ns.ManagedFields)
	}
	applied := false
	for _, mf := range ns.ManagedFields {
		if mf.Manager == k8sapply.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			applied = true
		}
	}
	if !applied {
		t.Errorf("managed fields %v: want an Apply entry of %s", ns.ManagedFields, k8sapply.FieldManager)
	}
	// A second pass applies again and keeps the object.
	again, err := a.Namespace(t.Context(), ourNamespace("bc-system").WithLabels(map[string]string{"tier": "system"}))
	if err != nil || !again.Applied {
		t.Fatalf("second pass %+v %v: want the same object", again, err)
	}
	ns, _ = cs.CoreV1().Namespaces().Get(t.Context(), "bc-system", metav1.GetOptions{})
	if ns.Labels["tier"] != "system" {
		t.Errorf("labels %v: the second apply did not land", ns.Labels)
	}
}

// TestNoTakeover: an object of the same name that we did not create is reported, never
// changed, and never deleted.
func TestNoTakeover(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reason string
		labels map[string]string
	}{
		{"no label at all", map[string]string{"team": "tenant"}},
		{"another pool's label", map[string]string{k8sapply.PoolLabel: "pool_someoneelse"}},
		{"our label but not our field manager", map[string]string{k8sapply.PoolLabel: pool}},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bcd-join", Namespace: "kube-system", Labels: tc.labels},
				StringData: map[string]string{"token": "the tenant's own"}}
			cs := k8sfake.New()
			if _, err := cs.CoreV1().Secrets("kube-system").Create(t.Context(), theirs, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
				t.Fatal(err)
			}
			a := k8sapply.Applier{Client: cs, PoolID: pool}
			cfg := corev1ac.Secret("bcd-join", "kube-system").WithLabels(map[string]string{k8sapply.PoolLabel: pool}).
				WithStringData(map[string]string{"token": "ours"})
			out, err := a.Secret(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if out.Conflict == "" || out.Applied {
				t.Errorf("outcome %+v: want a conflict and nothing applied", out)
			}
			gone, why, err := a.Remove(t.Context(), out.Ref)
			if err != nil || gone || why == "" {
				t.Errorf("remove: gone %v why %q err %v: want it left alone with a reason", gone, why, err)
			}
			got, err := cs.CoreV1().Secrets("kube-system").Get(t.Context(), "bcd-join", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the tenant's secret is gone: %v", err)
			}
			if got.StringData["token"] != "the tenant's own" || got.Labels[k8sapply.PoolLabel] != tc.labels[k8sapply.PoolLabel] {
				t.Errorf("the tenant's secret changed: %+v", got)
			}
		})
	}
}

// TestRemoveDeletesOnlyOurs removes what we applied and reports an absent object as gone.
func TestRemoveDeletesOnlyOurs(t *testing.T) {
	t.Parallel()
	cs := k8sfake.New()
	a := k8sapply.Applier{Client: cs, PoolID: pool}
	out, err := a.Namespace(t.Context(), ourNamespace("bc-system"))
	if err != nil {
		t.Fatal(err)
	}
	gone, _, err := a.Remove(t.Context(), out.Ref)
	if err != nil || !gone {
		t.Fatalf("remove ours: %v %v, want gone", gone, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "bc-system", metav1.GetOptions{}); err == nil {
		t.Error("our namespace is still there")
	}
	gone, _, err = a.Remove(t.Context(), out.Ref)
	if err != nil || !gone {
		t.Errorf("remove again: %v %v, want gone (nothing there)", gone, err)
	}
	if _, _, err := a.Remove(t.Context(), k8sapply.Ref{Kind: "ConfigMap", Name: "x"}); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

// TestDroppedFieldIsRemoved: a label the manifest stops setting is removed by the next apply:
// the first write is an apply too, so no Update entry of ours holds on to the first manifest.
func TestDroppedFieldIsRemoved(t *testing.T) {
	t.Parallel()
	cs := k8sfake.New()
	a := k8sapply.Applier{Client: cs, PoolID: pool}
	first := ourNamespace("bc-system").WithLabels(map[string]string{"tier": "system"})
	if out, err := a.Namespace(t.Context(), first); err != nil || !out.Applied {
		t.Fatalf("first write %+v %v", out, err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(t.Context(), "bc-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range ns.ManagedFields {
		if mf.Manager == k8sapply.FieldManager && mf.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("managed fields keep a %s entry of %s after the first write: %+v", mf.Operation, mf.Manager, ns.ManagedFields)
		}
	}
	if ns.Labels["tier"] != "system" {
		t.Fatalf("labels %v: the first manifest did not land", ns.Labels)
	}
	if out, err := a.Namespace(t.Context(), ourNamespace("bc-system")); err != nil || !out.Applied {
		t.Fatalf("second write %+v %v", out, err)
	}
	ns, err = cs.CoreV1().Namespaces().Get(t.Context(), "bc-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ns.Labels["tier"]; ok {
		t.Errorf("labels %v: the label the manifest dropped survived", ns.Labels)
	}
	if ns.Labels["app"] != "bcd" || ns.Labels[k8sapply.PoolLabel] != pool {
		t.Errorf("labels %v: the labels still in the manifest are gone", ns.Labels)
	}
}
