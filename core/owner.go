package core

import (
	"context"
	"errors"

	"better-compute.dev/compute/authz"
	"better-compute.dev/compute/store"
)

// tableOf maps an authorization object type to the table that records its tenant: the one list
// of the owned tables (store.OwnerOf reads whichever it is given; TestOwnedTables checks each
// answers).
var tableOf = map[string]string{
	authz.TypeProviderLoadBalancer: "load_balancers",
	authz.TypeInstance:             "instances",
	authz.TypePool:                 "pools",
	authz.TypeProject:              "projects",
	authz.TypeNetwork:              "networks",
	authz.TypeSubnet:               "subnets",
	authz.TypeCertificate:          "certificates",
	authz.TypeProviderAccount:      "provider_accounts",
	authz.TypeMetalNode:            "metal_nodes",
	authz.TypePoolSubstrate:        "substrates",
}

// OwnerOf returns the tenant the database says owns an object.
func (s *Base) OwnerOf(ctx context.Context, objectType, id string) (string, error) {
	table, ok := tableOf[objectType]
	if !ok {
		return "", store.ErrNotFound
	}
	return store.OwnerOf(ctx, s.Store.Q(), table, id)
}

// IsAuthzInvalid reports an authorization write the model refuses (a type that takes no grants).
func IsAuthzInvalid(err error) bool {
	return errors.Is(err, authz.ErrInvalid) || errors.Is(err, authz.ErrUnknownPermission)
}
