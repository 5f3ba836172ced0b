package sdk

import (
	"context"
	"iter"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
)

// Pages walks every page of a list: it calls list with req, yields each item items picks from
// the answer, and calls again with the answer's next_page_token until there is none. An error
// is yielded once, as the last pair. req is copied, never changed. Any list request with
// page_token and any answer with next_page_token fit:
//
//	for lb, err := range sdk.Pages(ctx, &v1.ListLoadBalancersRequest{TenantId: t, PageSize: 200},
//		client.LoadBalancers.ListLoadBalancers, (*v1.ListLoadBalancersResponse).GetLoadBalancers) { ... }
func Pages[Req, Resp any, PReq interface {
	*Req
	proto.Message
}, PResp interface {
	*Resp
	proto.Message
}, Item any](ctx context.Context, req PReq,
	list func(context.Context, *connect.Request[Req]) (*connect.Response[Resp], error),
	items func(PResp) []Item) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		next := proto.Clone(req).(PReq)
		for {
			resp, err := list(ctx, connect.NewRequest((*Req)(next)))
			if err != nil {
				var zero Item
				yield(zero, err)
				return
			}
			msg := PResp(resp.Msg)
			for _, it := range items(msg) {
				if !yield(it, nil) {
					return
				}
			}
			token := stringField(msg, "next_page_token")
			if token == "" {
				return
			}
			next = proto.Clone(next).(PReq)
			setStringField(next, "page_token", token)
		}
	}
}

// LoadBalancerPages is Pages over loadBalancers/list.
func LoadBalancerPages(ctx context.Context, lbs c.LoadBalancerServiceClient, req *v1.ListLoadBalancersRequest) iter.Seq2[*v1.LoadBalancer, error] {
	return Pages(ctx, req, lbs.ListLoadBalancers, (*v1.ListLoadBalancersResponse).GetLoadBalancers)
}

func stringField(m proto.Message, name protoreflect.Name) string {
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind {
		return r.Get(fd).String()
	}
	return ""
}

func setStringField(m proto.Message, name protoreflect.Name, v string) {
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind {
		r.Set(fd, protoreflect.ValueOfString(v))
	}
}
