package contract

import "testing"

// TestStoredSpecFromANewerReplica: a stored spec with a field this binary does not know (written
// by a newer replica) still reads, keeping the fields it knows.
func TestStoredSpecFromANewerReplica(t *testing.T) {
	spec, err := DecodeLoadBalancerSpec([]byte(`{"description":"web","fieldFromTheFuture":{"x":1}}`))
	if err != nil {
		t.Fatalf("a spec with an unknown field: %v", err)
	}
	if spec.GetDescription() != "web" {
		t.Errorf("description = %q, want web", spec.GetDescription())
	}
}
