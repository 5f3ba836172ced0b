package authz

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"github.com/openfga/language/pkg/go/transformer"
	"google.golang.org/protobuf/proto"
)

// modelDSL is the authorization model the engine is given at start.
//
//go:embed model.fga
var modelDSL string

// ModelDSL returns the embedded authorization model, in OpenFGA DSL.
func ModelDSL() string { return modelDSL }

// structuralRelations are relations of the model that are not permissions: roles,
// direct grant levels and the tenant link. Checking them is refused.
var structuralRelations = map[string]bool{
	string(RoleAdmin): true, string(RoleEditor): true, string(RoleViewer): true,
	string(LevelReader): true, string(LevelManager): true,
	tenantRelation: true,
}

// compiledModel is a parsed model with the lookups a check needs.
type compiledModel struct {
	proto *openfgav1.AuthorizationModel
	hash  string
	// permissions holds, per object type, the permission relations it defines.
	permissions map[string]map[string]bool
	// tenantLinked holds the types whose objects carry a tenant relation.
	tenantLinked map[string]bool
	// grantable holds the types that take direct reader/manager grants.
	grantable map[string]bool
}

// compileModel parses DSL text into the model written to the engine.
func compileModel(dsl string) (*compiledModel, error) {
	m, err := transformer.TransformDSLToProto(dsl)
	if err != nil {
		return nil, fmt.Errorf("authz: parse model: %w", err)
	}
	h, err := modelHash(m)
	if err != nil {
		return nil, err
	}
	cm := &compiledModel{
		proto:        m,
		hash:         h,
		permissions:  map[string]map[string]bool{},
		tenantLinked: map[string]bool{},
		grantable:    map[string]bool{},
	}
	for _, td := range m.GetTypeDefinitions() {
		perms := map[string]bool{}
		for rel := range td.GetRelations() {
			if !structuralRelations[rel] {
				perms[rel] = true
			}
		}
		cm.permissions[td.GetType()] = perms
		rels := td.GetRelations()
		if _, ok := rels[tenantRelation]; ok {
			cm.tenantLinked[td.GetType()] = true
		}
		_, r := rels[string(LevelReader)]
		_, w := rels[string(LevelManager)]
		if r && w {
			cm.grantable[td.GetType()] = true
		}
	}
	return cm, nil
}

// modelHash identifies a model by its content: schema version, type definitions
// and conditions, without the id the engine gave it. Two models with the same
// hash decide every check alike, so a start with an unchanged model writes none.
func modelHash(m *openfgav1.AuthorizationModel) (string, error) {
	content := &openfgav1.AuthorizationModel{
		SchemaVersion:   m.GetSchemaVersion(),
		TypeDefinitions: m.GetTypeDefinitions(),
		Conditions:      m.GetConditions(),
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(content)
	if err != nil {
		return "", fmt.Errorf("authz: hash model: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
