package contract

import (
	"google.golang.org/protobuf/encoding/protojson"

	"better-compute.dev/compute/apierr"
	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	"better-compute.dev/compute/store"
)

// EncodeLoadBalancerSpec is how a load balancer's settings (targets, forwarding, ...) are
// stored in its row: the public message as protojson.
func EncodeLoadBalancerSpec(spec *v1.LoadBalancer) ([]byte, error) {
	b, err := protojson.Marshal(spec)
	if err != nil {
		return nil, apierr.InternalErr(err)
	}
	return b, nil
}

// storedSpec reads what a replica stored. v1 only grows (buf breaking guards it), so a row a
// newer replica wrote differs only by fields this one does not know, which it must skip rather
// than fail on (a rolled-back replica reads rows a newer one wrote).
var storedSpec = protojson.UnmarshalOptions{DiscardUnknown: true}

// DecodeLoadBalancerSpec reads settings EncodeLoadBalancerSpec stored.
func DecodeLoadBalancerSpec(b []byte) (*v1.LoadBalancer, error) {
	spec := &v1.LoadBalancer{}
	if err := storedSpec.Unmarshal(b, spec); err != nil {
		return nil, apierr.InternalErr(err)
	}
	return spec, nil
}

// LoadBalancerSpec returns the settings of a row: what the reconciler makes the provider hold.
func LoadBalancerSpec(row store.LoadBalancer) (*v1.LoadBalancer, error) {
	return DecodeLoadBalancerSpec(row.Spec)
}
