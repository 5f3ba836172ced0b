//go:build deps

// Package deps pins the project's dependencies while their users are written.
package deps

import (
	_ "buf.build/go/protovalidate"
	_ "connectrpc.com/connect"
	_ "connectrpc.com/grpchealth"
	_ "connectrpc.com/grpcreflect"
	_ "github.com/bmc-toolbox/bmclib/v2"
	_ "github.com/cockroachdb/cockroach-go/v2/crdb/crdbpgxv5"
	_ "github.com/digitalocean/godo"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/oklog/ulid/v2"
	_ "github.com/openfga/go-sdk/client"
	_ "github.com/openfga/openfga/pkg/server"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "golang.org/x/net/http2"
	_ "golang.org/x/oauth2"
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	_ "google.golang.org/protobuf/proto"
)
