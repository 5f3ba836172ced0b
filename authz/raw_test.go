package authz

import (
	"context"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// writeRaw stores one tuple straight into the engine, bypassing the Authorizer's
// checks, with the database_tenant condition when binding is not empty.
func (c *client) writeRaw(ctx context.Context, object, relation, user, binding string) error {
	key := &openfgav1.TupleKey{Object: object, Relation: relation, User: user}
	if binding != "" {
		bc, err := structpb.NewStruct(map[string]any{"binding": binding})
		if err != nil {
			return err
		}
		key.Condition = &openfgav1.RelationshipCondition{Name: "database_tenant", Context: bc}
	}
	_, err := c.eng.Write(ctx, &openfgav1.WriteRequest{
		StoreId:              c.boot.storeID,
		AuthorizationModelId: c.boot.modelID,
		Writes:               &openfgav1.WriteRequestWrites{TupleKeys: []*openfgav1.TupleKey{key}},
	})
	return err
}
