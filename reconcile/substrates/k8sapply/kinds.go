package k8sapply

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
)

// Applier applies and removes the objects of one pool in one cluster.
type Applier struct {
	Client kubernetes.Interface
	PoolID string
}

var (
	createOpts = metav1.CreateOptions{FieldManager: FieldManager}
	// Force is safe: an apply only ever runs on an object that is already ours, and takes back
	// fields someone else edited on it.
	applyOpts = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	// The managedFields patch changes only metadata.managedFields, which the server does not
	// record as a manager's field.
	patchOpts = metav1.PatchOptions{FieldManager: FieldManager}
)

func (a Applier) namespaces() kind[*corev1ac.NamespaceApplyConfiguration, *corev1.Namespace] {
	c := a.Client.CoreV1().Namespaces()
	return kind[*corev1ac.NamespaceApplyConfiguration, *corev1.Namespace]{
		get: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.Namespace) (*corev1.Namespace, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *corev1ac.NamespaceApplyConfiguration) (*corev1.Namespace, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*corev1.Namespace, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *corev1.Namespace { return &corev1.Namespace{} },
	}
}

func (a Applier) secrets(ns string) kind[*corev1ac.SecretApplyConfiguration, *corev1.Secret] {
	c := a.Client.CoreV1().Secrets(ns)
	return kind[*corev1ac.SecretApplyConfiguration, *corev1.Secret]{
		get: func(ctx context.Context, name string) (*corev1.Secret, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.Secret) (*corev1.Secret, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *corev1ac.SecretApplyConfiguration) (*corev1.Secret, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*corev1.Secret, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *corev1.Secret { return &corev1.Secret{} },
	}
}

func (a Applier) daemonSets(ns string) kind[*appsv1ac.DaemonSetApplyConfiguration, *appsv1.DaemonSet] {
	c := a.Client.AppsV1().DaemonSets(ns)
	return kind[*appsv1ac.DaemonSetApplyConfiguration, *appsv1.DaemonSet]{
		get: func(ctx context.Context, name string) (*appsv1.DaemonSet, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *appsv1ac.DaemonSetApplyConfiguration) (*appsv1.DaemonSet, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*appsv1.DaemonSet, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
	}
}

func (a Applier) serviceAccounts(ns string) kind[*corev1ac.ServiceAccountApplyConfiguration, *corev1.ServiceAccount] {
	c := a.Client.CoreV1().ServiceAccounts(ns)
	return kind[*corev1ac.ServiceAccountApplyConfiguration, *corev1.ServiceAccount]{
		get: func(ctx context.Context, name string) (*corev1.ServiceAccount, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *corev1.ServiceAccount) (*corev1.ServiceAccount, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *corev1ac.ServiceAccountApplyConfiguration) (*corev1.ServiceAccount, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*corev1.ServiceAccount, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
	}
}

func (a Applier) clusterRoles() kind[*rbacv1ac.ClusterRoleApplyConfiguration, *rbacv1.ClusterRole] {
	c := a.Client.RbacV1().ClusterRoles()
	return kind[*rbacv1ac.ClusterRoleApplyConfiguration, *rbacv1.ClusterRole]{
		get: func(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *rbacv1.ClusterRole) (*rbacv1.ClusterRole, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *rbacv1ac.ClusterRoleApplyConfiguration) (*rbacv1.ClusterRole, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*rbacv1.ClusterRole, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} },
	}
}

func (a Applier) clusterRoleBindings() kind[*rbacv1ac.ClusterRoleBindingApplyConfiguration, *rbacv1.ClusterRoleBinding] {
	c := a.Client.RbacV1().ClusterRoleBindings()
	return kind[*rbacv1ac.ClusterRoleBindingApplyConfiguration, *rbacv1.ClusterRoleBinding]{
		get: func(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, o *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, error) {
			return c.Create(ctx, o, createOpts)
		},
		apply: func(ctx context.Context, cfg *rbacv1ac.ClusterRoleBindingApplyConfiguration) (*rbacv1.ClusterRoleBinding, error) {
			return c.Apply(ctx, cfg, applyOpts)
		},
		patch: func(ctx context.Context, name string, p []byte) (*rbacv1.ClusterRoleBinding, error) {
			return c.Patch(ctx, name, types.JSONPatchType, p, patchOpts)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
		typed:  func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} },
	}
}

// ServiceAccount ensures a service account.
func (a Applier) ServiceAccount(ctx context.Context, cfg *corev1ac.ServiceAccountApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.serviceAccounts(*cfg.Namespace), Ref{Kind: "ServiceAccount", Namespace: *cfg.Namespace, Name: *cfg.Name}, a.PoolID, cfg)
}

// ClusterRole ensures a cluster role.
func (a Applier) ClusterRole(ctx context.Context, cfg *rbacv1ac.ClusterRoleApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.clusterRoles(), Ref{Kind: "ClusterRole", Name: *cfg.Name}, a.PoolID, cfg)
}

// ClusterRoleBinding ensures a cluster role binding.
func (a Applier) ClusterRoleBinding(ctx context.Context, cfg *rbacv1ac.ClusterRoleBindingApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.clusterRoleBindings(), Ref{Kind: "ClusterRoleBinding", Name: *cfg.Name}, a.PoolID, cfg)
}

// Namespace ensures a namespace (see the package comment for the rule).
func (a Applier) Namespace(ctx context.Context, cfg *corev1ac.NamespaceApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.namespaces(), Ref{Kind: "Namespace", Name: *cfg.Name}, a.PoolID, cfg)
}

// Secret ensures a secret.
func (a Applier) Secret(ctx context.Context, cfg *corev1ac.SecretApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.secrets(*cfg.Namespace), Ref{Kind: "Secret", Namespace: *cfg.Namespace, Name: *cfg.Name}, a.PoolID, cfg)
}

// DaemonSet ensures a daemon set.
func (a Applier) DaemonSet(ctx context.Context, cfg *appsv1ac.DaemonSetApplyConfiguration) (Outcome, error) {
	return ensure(ctx, a.daemonSets(*cfg.Namespace), Ref{Kind: "DaemonSet", Namespace: *cfg.Namespace, Name: *cfg.Name}, a.PoolID, cfg)
}

// Remove deletes the object ref names when it is ours. It reports whether the object is gone
// and, when it was left alone because it is not ours, why.
func (a Applier) Remove(ctx context.Context, ref Ref) (gone bool, why string, err error) {
	switch ref.Kind {
	case "Namespace":
		return remove(ctx, a.namespaces(), ref, a.PoolID)
	case "Secret":
		return remove(ctx, a.secrets(ref.Namespace), ref, a.PoolID)
	case "DaemonSet":
		return remove(ctx, a.daemonSets(ref.Namespace), ref, a.PoolID)
	case "ServiceAccount":
		return remove(ctx, a.serviceAccounts(ref.Namespace), ref, a.PoolID)
	case "ClusterRole":
		return remove(ctx, a.clusterRoles(), ref, a.PoolID)
	case "ClusterRoleBinding":
		return remove(ctx, a.clusterRoleBindings(), ref, a.PoolID)
	}
	return false, "", errUnknownKind(ref)
}
