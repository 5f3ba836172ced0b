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
)

// Applier applies and removes the objects of one pool in one cluster.
type Applier struct {
	Client Cluster
	PoolID string
}

// applyOpts is every apply's options: force only on an object that is already ours (it takes
// back fields someone else edited on it), never on a first write.
func applyOpts(force bool) metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: force}
}

// The managedFields patch changes only metadata.managedFields, which the server does not
// record as a manager's field.
var patchOpts = metav1.PatchOptions{FieldManager: FieldManager}

func (a Applier) namespaces() kind[*corev1ac.NamespaceApplyConfiguration, *corev1.Namespace] {
	c := a.Client.CoreV1().Namespaces()
	return kind[*corev1ac.NamespaceApplyConfiguration, *corev1.Namespace]{
		apiVersion: "v1", kind: "Namespace", namespace: "",
		get: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *corev1ac.NamespaceApplyConfiguration, force bool) (*corev1.Namespace, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*corev1.Namespace, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
	}
}

func (a Applier) secrets(ns string) kind[*corev1ac.SecretApplyConfiguration, *corev1.Secret] {
	c := a.Client.CoreV1().Secrets(ns)
	return kind[*corev1ac.SecretApplyConfiguration, *corev1.Secret]{
		apiVersion: "v1", kind: "Secret", namespace: ns,
		get: func(ctx context.Context, name string) (*corev1.Secret, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *corev1ac.SecretApplyConfiguration, force bool) (*corev1.Secret, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*corev1.Secret, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
	}
}

func (a Applier) daemonSets(ns string) kind[*appsv1ac.DaemonSetApplyConfiguration, *appsv1.DaemonSet] {
	c := a.Client.AppsV1().DaemonSets(ns)
	return kind[*appsv1ac.DaemonSetApplyConfiguration, *appsv1.DaemonSet]{
		apiVersion: "apps/v1", kind: "DaemonSet", namespace: ns,
		get: func(ctx context.Context, name string) (*appsv1.DaemonSet, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *appsv1ac.DaemonSetApplyConfiguration, force bool) (*appsv1.DaemonSet, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*appsv1.DaemonSet, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
	}
}

func (a Applier) serviceAccounts(ns string) kind[*corev1ac.ServiceAccountApplyConfiguration, *corev1.ServiceAccount] {
	c := a.Client.CoreV1().ServiceAccounts(ns)
	return kind[*corev1ac.ServiceAccountApplyConfiguration, *corev1.ServiceAccount]{
		apiVersion: "v1", kind: "ServiceAccount", namespace: ns,
		get: func(ctx context.Context, name string) (*corev1.ServiceAccount, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *corev1ac.ServiceAccountApplyConfiguration, force bool) (*corev1.ServiceAccount, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*corev1.ServiceAccount, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
	}
}

func (a Applier) clusterRoles() kind[*rbacv1ac.ClusterRoleApplyConfiguration, *rbacv1.ClusterRole] {
	c := a.Client.RbacV1().ClusterRoles()
	return kind[*rbacv1ac.ClusterRoleApplyConfiguration, *rbacv1.ClusterRole]{
		apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", namespace: "",
		get: func(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *rbacv1ac.ClusterRoleApplyConfiguration, force bool) (*rbacv1.ClusterRole, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*rbacv1.ClusterRole, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
	}
}

func (a Applier) clusterRoleBindings() kind[*rbacv1ac.ClusterRoleBindingApplyConfiguration, *rbacv1.ClusterRoleBinding] {
	c := a.Client.RbacV1().ClusterRoleBindings()
	return kind[*rbacv1ac.ClusterRoleBindingApplyConfiguration, *rbacv1.ClusterRoleBinding]{
		apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", namespace: "",
		get: func(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		},
		apply: func(ctx context.Context, cfg *rbacv1ac.ClusterRoleBindingApplyConfiguration, force bool) (*rbacv1.ClusterRoleBinding, error) {
			return c.Apply(ctx, cfg, applyOpts(force))
		},
		patch: func(ctx context.Context, name string, pt types.PatchType, p []byte, o metav1.PatchOptions) (*rbacv1.ClusterRoleBinding, error) {
			return c.Patch(ctx, name, pt, p, o)
		},
		delete: func(ctx context.Context, name string, o metav1.DeleteOptions) error { return c.Delete(ctx, name, o) },
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
