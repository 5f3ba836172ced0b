package substrates

import (
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"better-compute.dev/compute/reconcile/managed"
	"better-compute.dev/compute/reconcile/substrates/k8sapply"
)

// Names of what a substrate applies into its cluster. The namespace carries the pool's name
// (bc-<pool id>), so substrates of two pools on one adopted cluster never claim the same
// names.
const (
	SecretName    = "bcd-join"
	DaemonSetName = "bcd"
	// Secret keys bcd reads.
	SecretKeyToken   = "token"
	SecretKeyPoolID  = "poolId"
	SecretKeyJoinURL = "joinUrl"
)

// manifests builds a pool's objects as apply configurations.
type manifests struct {
	poolID  string
	joinURL string
	image   string
}

// NamespaceName is the namespace of a pool's objects.
func NamespaceName(poolID string) string { return managed.ProviderName(poolID) }

func (m manifests) labels() map[string]string {
	return map[string]string{k8sapply.PoolLabel: m.poolID, "app.kubernetes.io/managed-by": k8sapply.FieldManager}
}

func (m manifests) namespaceRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "Namespace", Name: NamespaceName(m.poolID)}
}

func (m manifests) secretRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "Secret", Namespace: NamespaceName(m.poolID), Name: SecretName}
}

func (m manifests) daemonSetRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "DaemonSet", Namespace: NamespaceName(m.poolID), Name: DaemonSetName}
}

func (m manifests) namespace() *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(NamespaceName(m.poolID)).WithLabels(m.labels())
}

// secret holds the hosted join token bcd presents, with the pool and where to present it.
func (m manifests) secret(token string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(SecretName, NamespaceName(m.poolID)).WithLabels(m.labels()).
		WithStringData(map[string]string{SecretKeyToken: token, SecretKeyPoolID: m.poolID, SecretKeyJoinURL: m.joinURL})
}

// ServiceAccountName is bcd's service account in the pool's namespace.
const ServiceAccountName = "bcd"

// NodeReaderName names the cluster role (and its binding) that lets bcd read Nodes; it is
// cluster-scoped, so it carries the pool's name to stay apart from other pools'.
func NodeReaderName(poolID string) string { return managed.ProviderName(poolID) + "-bcd-node-reader" }

func (m manifests) serviceAccountRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "ServiceAccount", Namespace: NamespaceName(m.poolID), Name: ServiceAccountName}
}

func (m manifests) clusterRoleRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "ClusterRole", Name: NodeReaderName(m.poolID)}
}

func (m manifests) clusterRoleBindingRef() k8sapply.Ref {
	return k8sapply.Ref{Kind: "ClusterRoleBinding", Name: NodeReaderName(m.poolID)}
}

// serviceAccount is the identity bcd's pods run as (instead of the namespace's default).
func (m manifests) serviceAccount() *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(ServiceAccountName, NamespaceName(m.poolID)).WithLabels(m.labels())
}

// clusterRole is the least bcd needs: get on Nodes, to read its own Node's spec.providerID
// (which the Downward API does not expose). Nodes are cluster-scoped and bcd knows only its
// node name at start, so the rule cannot narrow to resourceNames; it grants no list, watch or
// write, and nothing else.
func (m manifests) clusterRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	return rbacv1ac.ClusterRole(NodeReaderName(m.poolID)).WithLabels(m.labels()).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("nodes").WithVerbs("get"))
}

// clusterRoleBinding grants the cluster role to bcd's service account only.
func (m manifests) clusterRoleBinding() *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(NodeReaderName(m.poolID)).WithLabels(m.labels()).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(NodeReaderName(m.poolID))).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName(ServiceAccountName).WithNamespace(NamespaceName(m.poolID)))
}

// daemonSet runs bcd on the nodes of our node pools only (they carry the pool label; the
// tenant's own nodes on an adopted cluster do not).
func (m manifests) daemonSet() *appsv1ac.DaemonSetApplyConfiguration {
	podLabels := map[string]string{"app.kubernetes.io/name": DaemonSetName, k8sapply.PoolLabel: m.poolID}
	fromSecret := func(env, key string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(env).WithValueFrom(corev1ac.EnvVarSource().
			WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(SecretName).WithKey(key)))
	}
	fromField := func(env, path string) *corev1ac.EnvVarApplyConfiguration {
		return corev1ac.EnvVar().WithName(env).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath(path)))
	}
	container := corev1ac.Container().WithName(DaemonSetName).WithImage(m.image).WithEnv(
		fromSecret("BC_JOIN_TOKEN", SecretKeyToken),
		fromSecret("BC_POOL_ID", SecretKeyPoolID),
		fromSecret("BC_JOIN_URL", SecretKeyJoinURL),
		fromField("BC_NODE_NAME", "spec.nodeName"),
	)
	return appsv1ac.DaemonSet(DaemonSetName, NamespaceName(m.poolID)).WithLabels(m.labels()).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(podLabels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(podLabels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(ServiceAccountName).
					WithNodeSelector(map[string]string{k8sapply.PoolLabel: m.poolID}).
					WithContainers(container))))
}
