// Package k8sapply puts objects into a cluster by server-side apply under a field manager of
// our own, and keeps the rule that an object of the same name we did not create is never
// taken over or deleted.
//
// An object is ours when it carries the label PoolLabel with our pool's id and our field
// manager appears in its managed fields. The first write of a name is a Create (which fails
// when someone else made it meanwhile, so a race never merges our fields into another's
// object); every later write is a server-side apply with force, which only ever runs on an
// object already ours. Deletes run only on our objects and are preconditioned on the uid
// observed, so an object replaced under the same name in between is left alone.
//
// The Create leaves an Update entry of our manager in managedFields that owns every field of
// the first manifest; as long as it is there, a field a later manifest stops setting is never
// removed (server-side apply only drops fields no manager owns any more). So after an apply
// that entry is cleared by a JSON patch guarded on the resourceVersion the apply returned,
// leaving our Apply entry as the only owner of our fields.
package k8sapply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldManager is the server-side apply field manager of everything the control plane applies.
const FieldManager = "better-compute"

// PoolLabel marks every object applied for a substrate with its pool id.
const PoolLabel = "better-compute.dev/substrate-pool"

// Ref names one object.
type Ref struct {
	Kind      string // Namespace, Secret, DaemonSet, ServiceAccount, ClusterRole, ClusterRoleBinding
	Namespace string // empty for cluster-scoped kinds
	Name      string
}

// String renders the ref as kind/namespace/name.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Outcome is what Ensure did with one object: applied, or left alone because it is not ours
// (Conflict says why).
type Outcome struct {
	Ref      Ref
	Applied  bool
	UID      string // the object's uid as the API server reports it
	Conflict string
}

// Owned reports whether obj is ours for pool, and when not, why.
func Owned(obj metav1.Object, poolID string) (bool, string) {
	if got, ok := obj.GetLabels()[PoolLabel]; !ok || got != poolID {
		return false, fmt.Sprintf("it has no %s=%s label: another party made it", PoolLabel, poolID)
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager {
			return true, ""
		}
	}
	return false, "its fields are not managed by " + FieldManager + ": another party made it"
}

// kind is the typed client of one kind, reduced to what Ensure and Remove need. cfg is the
// kind's apply configuration; typed is a fresh empty object of the kind.
type kind[C any, T metav1.Object] struct {
	get    func(ctx context.Context, name string) (T, error)
	create func(ctx context.Context, obj T) (T, error)
	apply  func(ctx context.Context, cfg C) (T, error)
	patch  func(ctx context.Context, name string, jsonPatch []byte) (T, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	typed  func() T
}

// ensure creates the object when the name is free and applies it when it is ours.
func ensure[C any, T metav1.Object](ctx context.Context, k kind[C, T], ref Ref, poolID string, cfg C) (Outcome, error) {
	out := Outcome{Ref: ref}
	cur, err := k.get(ctx, ref.Name)
	if apierrors.IsNotFound(err) {
		obj := k.typed()
		if err := convert(cfg, obj); err != nil {
			return out, fmt.Errorf("k8sapply: %s: %w", ref, err)
		}
		cur, err = k.create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			cur, err = k.get(ctx, ref.Name)
		}
	}
	if err != nil {
		return out, fmt.Errorf("k8sapply: %s: %w", ref, err)
	}
	if ok, why := Owned(cur, poolID); !ok {
		out.Conflict = why
		return out, nil
	}
	applied, err := k.apply(ctx, cfg)
	if err != nil {
		return out, fmt.Errorf("k8sapply: apply %s: %w", ref, err)
	}
	if err := dropUpdateEntry(ctx, k, ref, applied); err != nil {
		return out, err
	}
	out.Applied, out.UID = true, string(applied.GetUID())
	return out, nil
}

// dropUpdateEntry removes our manager's Update entries (left by the Create) from obj's
// managedFields, keeping every other entry as it is. The patch tests the resourceVersion, so
// it never rewrites the ownership of an object changed in between; such a conflict is left
// for the next pass, which applies and tries again.
func dropUpdateEntry[C any, T metav1.Object](ctx context.Context, k kind[C, T], ref Ref, obj T) error {
	keep := make([]metav1.ManagedFieldsEntry, 0, len(obj.GetManagedFields()))
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationUpdate {
			continue
		}
		keep = append(keep, mf)
	}
	// Nothing to drop, or nothing left (an empty list would ask the server to rebuild
	// managedFields; never the case, the apply just added our Apply entry).
	if len(keep) == len(obj.GetManagedFields()) || len(keep) == 0 {
		return nil
	}
	ops := []map[string]any{{"op": "replace", "path": "/metadata/managedFields", "value": keep}}
	if rv := obj.GetResourceVersion(); rv != "" {
		// Every API server sets one; only the fake clientset leaves it empty.
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": rv}}, ops...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("k8sapply: %s: encode managedFields patch: %w", ref, err)
	}
	_, err = k.patch(ctx, ref.Name, patch)
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) && !apierrors.IsNotFound(err) &&
		!isUnprocessable(err) { // a failed test op (the object changed since the apply)
		return fmt.Errorf("k8sapply: %s: clear the create's managedFields entry: %w", ref, err)
	}
	return nil
}

func isUnprocessable(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code == 422
}

// remove deletes the object when it is ours; it reports whether the object is gone (true also
// when there was none) and, when it was left alone, why.
func remove[C any, T metav1.Object](ctx context.Context, k kind[C, T], ref Ref, poolID string) (bool, string, error) {
	cur, err := k.get(ctx, ref.Name)
	if apierrors.IsNotFound(err) {
		return true, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("k8sapply: %s: %w", ref, err)
	}
	if ok, why := Owned(cur, poolID); !ok {
		return false, why, nil
	}
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if uid := cur.GetUID(); uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = k.delete(ctx, ref.Name, opts)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, "", nil
	case apierrors.IsConflict(err):
		return false, "it was replaced while being deleted", nil
	}
	return false, "", fmt.Errorf("k8sapply: delete %s: %w", ref, err)
}

// convert turns an apply configuration into the typed object a Create sends (both share the
// object's JSON form).
func convert(cfg any, obj any) error {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	if err := json.Unmarshal(raw, obj); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

func errUnknownKind(ref Ref) error { return fmt.Errorf("k8sapply: %s: kind not handled", ref) }
