// Package k8sfake is an in-memory k8sapply.Cluster for tests: client-go's object tracker with
// field management, so server-side apply records managers and reports conflicts, behind the
// fakes of the three API groups the reconciler uses. It stands in for client-go's fake clientset,
// which compiles a fake of every API group (see k8sapply.Cluster).
//
// Field management here deduces each object's structure from the object itself instead of
// reading Kubernetes' published schemas (which only the all-groups package carries): lists are
// atomic and maps are merged by key. The tests that depend on the real server's merge rules run
// against a real kube-apiserver (package kubetest).
package k8sfake

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	fakeappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecorev1 "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	fakerbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Cluster is one fake cluster. Its Fake records the actions and lets a test add reactors.
type Cluster struct {
	clienttesting.Fake
	tracker clienttesting.ObjectTracker
}

// New returns a cluster holding objects.
func New(objects ...runtime.Object) *Cluster {
	tracker := clienttesting.NewFieldManagedObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder(),
		managedfields.NewDeducedTypeConverter())
	for _, obj := range objects {
		if err := tracker.Add(obj); err != nil {
			panic(err)
		}
	}
	c := &Cluster{tracker: tracker}
	c.AddReactor("*", "*", clienttesting.ObjectReaction(tracker))
	c.AddWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	return c
}

func (c *Cluster) CoreV1() corev1client.CoreV1Interface { return &fakecorev1.FakeCoreV1{Fake: &c.Fake} }
func (c *Cluster) AppsV1() appsv1client.AppsV1Interface { return &fakeappsv1.FakeAppsV1{Fake: &c.Fake} }
func (c *Cluster) RbacV1() rbacv1client.RbacV1Interface { return &fakerbacv1.FakeRbacV1{Fake: &c.Fake} }
