// Package k8sapply puts objects into a cluster by server-side apply under a field manager of
// our own, and keeps the rule that an object of the same name we did not create is never
// taken over or deleted.
//
// An object is ours when it carries the label PoolLabel with our pool's id and our field
// manager appears in its managed fields. Every write is a server-side apply under that manager,
// the first one included, so our Apply entry is the only managedFields entry of ours and owns
// exactly the fields of the latest manifest: a field a later manifest stops setting is
// removed. The first write of a name found free is an apply without force; when someone made
// the name in between, it fails on their differing fields or merges into their object, and a
// merge is undone at once (see firstApply), so a race never takes their object over. Every
// later write is an apply with force, which only ever runs on an object already ours. Deletes
// run only on our objects and are preconditioned on the uid observed, so an object replaced
// under the same name in between is left alone.
package k8sapply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// kind is the typed client of one kind, reduced to what Ensure and Remove need. C is the
// kind's apply configuration, T its object; gvk and namespace say what release applies.
type kind[C any, T metav1.Object] struct {
	apiVersion, kind, namespace string

	get    func(ctx context.Context, name string) (T, error)
	apply  func(ctx context.Context, cfg C, force bool) (T, error)
	patch  func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// release applies an empty configuration of the object under our field manager: we give up
// every field we own, and those no other manager owns are removed.
func (k kind[C, T]) release(ctx context.Context, name string) (T, error) {
	meta := map[string]any{"name": name}
	if k.namespace != "" {
		meta["namespace"] = k.namespace
	}
	body, err := json.Marshal(map[string]any{"apiVersion": k.apiVersion, "kind": k.kind, "metadata": meta})
	if err != nil {
		var zero T
		return zero, err
	}
	return k.patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
}

// ensure writes the object by server-side apply when the name is free (its first write) or
// when it is ours, and reports it as a conflict otherwise.
func ensure[C any, T metav1.Object](ctx context.Context, k kind[C, T], ref Ref, poolID string, cfg C) (Outcome, error) {
	out := Outcome{Ref: ref}
	cur, err := k.get(ctx, ref.Name)
	if apierrors.IsNotFound(err) {
		var created bool
		cur, created, err = firstApply(ctx, k, ref, cfg)
		if err == nil && created {
			out.Applied, out.UID = true, string(cur.GetUID())
			return out, nil
		}
	}
	if err != nil {
		return out, fmt.Errorf("k8sapply: %s: %w", ref, err)
	}
	if ok, why := Owned(cur, poolID); !ok {
		out.Conflict = why
		return out, nil
	}
	applied, err := k.apply(ctx, cfg, true)
	if err != nil {
		return out, fmt.Errorf("k8sapply: apply %s: %w", ref, err)
	}
	if err := dropUpdateEntry(ctx, k, ref, applied); err != nil {
		return out, err
	}
	out.Applied, out.UID = true, string(applied.GetUID())
	return out, nil
}

// firstApply writes a name found free: a server-side apply without force, so the object it
// makes has our Apply entry as its only managedFields entry. Someone may have made the name
// between the read and the apply; then the apply either fails on a field they set differently
// (a conflict), or merges into their object, which its answer shows as another manager's
// entry. Either way the object is theirs: a merge is undone by applying an empty
// configuration under our manager, which gives up every field we set (fields only we set go,
// fields they set stay). It returns the object as it is and whether we made it.
func firstApply[C any, T metav1.Object](ctx context.Context, k kind[C, T], ref Ref, cfg C) (T, bool, error) {
	var zero T
	obj, err := k.apply(ctx, cfg, false)
	if apierrors.IsConflict(err) {
		obj, err = k.get(ctx, ref.Name)
		return obj, false, err
	}
	if err != nil {
		return zero, false, err
	}
	if !slices.ContainsFunc(obj.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool { return mf.Manager != FieldManager }) {
		return obj, true, nil
	}
	if obj, err = k.release(ctx, ref.Name); err != nil {
		return zero, false, fmt.Errorf("give up the fields merged into another's object: %w", err)
	}
	return obj, false, nil
}

// dropUpdateEntry removes our manager's Update entries from obj's managedFields, keeping every
// other entry as it is. Objects written first by apply have none; an object first written by
// an earlier version of this package (a Create with our field manager) has one, which owns
// every field of that first manifest and so would keep a field a later manifest drops. The patch tests the resourceVersion, so
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
		// Every API server sets one; only the fake cluster (k8sfake) leaves it empty.
		ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": rv}}, ops...)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("k8sapply: %s: encode managedFields patch: %w", ref, err)
	}
	_, err = k.patch(ctx, ref.Name, types.JSONPatchType, patch, patchOpts)
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

func errUnknownKind(ref Ref) error { return fmt.Errorf("k8sapply: %s: kind not handled", ref) }
