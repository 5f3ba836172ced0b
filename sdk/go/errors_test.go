package sdk_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
	c "better-compute.dev/compute/gen/go/bettercompute/compute/v1/computev1connect"
	sdk "better-compute.dev/compute/sdk/go"
)

// fakeLBs answers GetLoadBalancer by the id asked: "invalid" fails with the platform's details,
// "bare" with a detail-less UNAVAILABLE, "block" waits for the caller to give up.
type fakeLBs struct {
	c.UnimplementedLoadBalancerServiceHandler
}

func (fakeLBs) GetLoadBalancer(ctx context.Context, r *connect.Request[v1.GetLoadBalancerRequest]) (*connect.Response[v1.GetLoadBalancerResponse], error) {
	switch r.Msg.GetLoadBalancerId() {
	case "invalid":
		ce := connect.NewError(connect.CodeInvalidArgument, errors.New("name: bad; forwarding[0].entryPort: bad"))
		info, _ := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: "INVALID_INPUT", Domain: sdk.Domain,
			Metadata: map[string]string{"field": "name", "requestId": "req-from-info"}})
		ce.AddDetail(info)
		vs, _ := connect.NewErrorDetail(&validate.Violations{Violations: []*validate.Violation{
			{Field: &validate.FieldPath{Elements: []*validate.FieldPathElement{{FieldName: proto.String("name")}}}, RuleId: proto.String("string.pattern"), Message: proto.String("bad name")},
			{Field: &validate.FieldPath{Elements: []*validate.FieldPathElement{
				{FieldName: proto.String("forwarding"), Subscript: &validate.FieldPathElement_Index{Index: 0}},
				{FieldName: proto.String("entry_port")}}}, RuleId: proto.String("int32.gte"), Message: proto.String("too small")},
			{RuleId: proto.String("targets.exactly_one"), Message: proto.String("one target kind")},
		}})
		ce.AddDetail(vs)
		return nil, ce
	case "bare":
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("overloaded"))
	case "block":
		<-ctx.Done()
		return nil, connect.NewError(connect.CodeUnavailable, ctx.Err())
	}
	return connect.NewResponse(&v1.GetLoadBalancerResponse{LoadBalancer: &v1.LoadBalancer{Id: r.Msg.GetLoadBalancerId()}}), nil
}

func fakeServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(c.NewLoadBalancerServiceHandler(fakeLBs{}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(sdk.RequestIDHeader, "req-from-header")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(ctx context.Context, client *sdk.Client, id string) error {
	_, err := client.LoadBalancers.GetLoadBalancer(ctx, connect.NewRequest(&v1.GetLoadBalancerRequest{TenantId: "t", LoadBalancerId: id}))
	return err
}

// TestErrorDetails: the reason, the first field, every violation and the request id come out of
// one failed call, as *Error through errors.As and AsError alike.
func TestErrorDetails(t *testing.T) {
	client := sdk.New(fakeServer(t), "tok")
	err := get(t.Context(), client, "invalid")
	var pe *sdk.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%T %v is no *sdk.Error", err, err)
	}
	want := []sdk.Violation{
		{Field: "name", Rule: "string.pattern", Message: "bad name"},
		{Field: "forwarding[0].entryPort", Rule: "int32.gte", Message: "too small"},
		{Field: "targets", Rule: "targets.exactly_one", Message: "one target kind"},
	}
	if pe.Code != sdk.InvalidInput || pe.Field != "name" || pe.RequestID != "req-from-info" || len(pe.Violations) != len(want) {
		t.Fatalf("%+v", pe)
	}
	for i := range want {
		if pe.Violations[i] != want[i] {
			t.Fatalf("violation %d: %+v, want %+v", i, pe.Violations[i], want[i])
		}
	}
	if again, ok := sdk.AsError(err); !ok || again != pe {
		t.Fatalf("AsError: %v %v", again, ok)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Fatalf("the Connect error is not reachable: %v", err)
	}

	err = get(t.Context(), client, "bare")
	if pe, ok := sdk.AsError(err); !ok || pe.Code != sdk.Unavailable || pe.RequestID != "req-from-header" || !pe.Temporary() {
		t.Fatalf("bare unavailable: %+v", pe)
	}
	if err := get(t.Context(), client, "plb_ok"); err != nil {
		t.Fatal(err)
	}
}

// TestTransportFailureIsUnavailable: a refused connection is UNAVAILABLE, a platform error.
func TestTransportFailureIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = get(t.Context(), sdk.New("http://"+addr, "tok"), "x")
	pe, ok := sdk.AsError(err)
	if !ok || pe.Code != sdk.Unavailable || !pe.Temporary() {
		t.Fatalf("refused connection: %T %v", err, err)
	}
}

// TestCallerCancelIsNoPlatformError: the caller's own deadline or cancel comes back as the
// context's error, never as a platform reason.
func TestCallerCancelIsNoPlatformError(t *testing.T) {
	client := sdk.New(fakeServer(t), "tok")
	ctx, cancel := context.WithTimeout(t.Context(), 1) // passed at once
	defer cancel()
	<-ctx.Done()
	err := get(ctx, client, "block")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %T %v", err, err)
	}
	if pe, ok := sdk.AsError(err); ok {
		t.Fatalf("deadline read as platform error %v", pe)
	}
	ctx, cancel = context.WithCancel(t.Context())
	go func() { cancel() }()
	err = get(ctx, client, "block")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %T %v", err, err)
	}
	if _, ok := sdk.AsError(err); ok {
		t.Fatal("cancel read as platform error")
	}
}

// TestReasonForCode: the fallback of answers without platform details.
func TestReasonForCode(t *testing.T) {
	for code, want := range map[connect.Code]sdk.Code{
		connect.CodeInvalidArgument: sdk.InvalidInput, connect.CodeResourceExhausted: sdk.InvalidInput,
		connect.CodeNotFound: sdk.NotFound, connect.CodePermissionDenied: sdk.AccessDenied,
		connect.CodeFailedPrecondition: sdk.InvalidState, connect.CodeUnauthenticated: sdk.Unauthenticated,
		connect.CodeUnavailable: sdk.Unavailable, connect.CodeDeadlineExceeded: sdk.Unavailable,
		connect.CodeInternal: sdk.Internal, connect.CodeUnknown: sdk.Internal, connect.CodeDataLoss: sdk.Internal,
	} {
		if got := sdk.ReasonForCode(code); got != want {
			t.Errorf("%v: %v, want %v", code, got, want)
		}
	}
}

// TestReasonsAreErrorsProtos: the SDK's named reasons are exactly errors.proto's ErrorReason values
// (without the ERROR_REASON_ prefix and the never-sent UNSPECIFIED), each under its own name.
func TestReasonsAreErrorsProtos(t *testing.T) {
	named := map[sdk.Code]string{
		sdk.InvalidInput:    "INVALID_INPUT",
		sdk.NotFound:        "NOT_FOUND",
		sdk.AccessDenied:    "ACCESS_DENIED",
		sdk.QuotaExceeded:   "QUOTA_EXCEEDED",
		sdk.InvalidState:    "INVALID_STATE",
		sdk.Unauthenticated: "UNAUTHENTICATED",
		sdk.Unavailable:     "UNAVAILABLE",
		sdk.Internal:        "INTERNAL",
	}
	proto := map[sdk.Code]bool{}
	for number, name := range v1.ErrorReason_name {
		if number != 0 {
			proto[sdk.Code(name[len("ERROR_REASON_"):])] = true
		}
	}
	for code, want := range named {
		if string(code) != want || !proto[code] {
			t.Errorf("reason %q is named %q (in errors.proto: %t)", want, code, proto[code])
		}
	}
	if len(named) != len(proto) {
		t.Errorf("errors.proto has %d reasons (%v), the SDK names %d", len(proto), proto, len(named))
	}
}
