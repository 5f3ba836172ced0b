package server

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	v1 "better-compute.dev/compute/gen/go/bettercompute/compute/v1"
)

// apiPackage is the protobuf package of the API's services.
const apiPackage = "bettercompute.compute.v1"

// Procedure is one method of the API as the generated descriptors state it.
type Procedure struct {
	// Name is the Connect procedure ("/bettercompute.compute.v1.LoadBalancerService/GetLoadBalancer").
	Name string
	// Service is the service's full name ("bettercompute.compute.v1.LoadBalancerService").
	Service string
	// Stream is true for a server stream (no JSON route).
	Stream bool
	// Access is the method's (access) option: its JSON route and the permission core checks. Nil
	// when the method has none (TestEveryProcedureIsRegistered fails on that).
	Access *v1.Access
}

// Procedures lists every method of every service of the API, read from the file descriptors in
// gen/go, sorted by name. The JSON routes and the service list derive from it; tests check each
// procedure against the handlers, the authorization matrix and the SDKs.
func Procedures() []Procedure {
	var out []Procedure
	protoregistry.GlobalFiles.RangeFilesByPackage(apiPackage, func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				p := Procedure{Name: "/" + string(sd.FullName()) + "/" + string(md.Name()), Service: string(sd.FullName()), Stream: md.IsStreamingServer() || md.IsStreamingClient()}
				if opts := md.Options(); opts != nil && proto.HasExtension(opts, v1.E_Access) {
					p.Access, _ = proto.GetExtension(opts, v1.E_Access).(*v1.Access)
				}
				out = append(out, p)
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b Procedure) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// serviceNames lists every service of the API once, in the order of Procedures.
func serviceNames() []string {
	var out []string
	for _, p := range Procedures() {
		if !slices.Contains(out, p.Service) {
			out = append(out, p.Service)
		}
	}
	return out
}
