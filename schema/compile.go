package schema

import (
	"errors"
	"fmt"

	"github.com/xeipuuv/gojsonreference"
	"github.com/xeipuuv/gojsonschema"
)

// docLoader hands an already decoded document to gojsonschema. Its loader
// factory refuses every load, so no reference can ever reach the network or
// the file system, whatever the checks of safety.go might have missed.
type docLoader struct{ doc any }

func (l docLoader) JsonSource() any                               { return l.doc }
func (l docLoader) LoadJSON() (any, error)                        { return l.doc, nil }
func (l docLoader) LoaderFactory() gojsonschema.JSONLoaderFactory { return noFetch{} }
func (l docLoader) JsonReference() (gojsonreference.JsonReference, error) {
	return gojsonreference.NewJsonReference("#")
}

type noFetch struct{}

func (noFetch) New(source string) gojsonschema.JSONLoader { return refusedLoader(source) }

type refusedLoader string

func (l refusedLoader) JsonSource() any                               { return string(l) }
func (l refusedLoader) LoaderFactory() gojsonschema.JSONLoaderFactory { return noFetch{} }
func (l refusedLoader) JsonReference() (gojsonreference.JsonReference, error) {
	return gojsonreference.NewJsonReference(string(l))
}
func (l refusedLoader) LoadJSON() (any, error) {
	return nil, fmt.Errorf("refusing to load %q: schemas are never fetched: %w", string(l), ErrRemoteRef)
}

// compile compiles a prepared document with gojsonschema, turning a panic
// into an error.
func compile(payloadType string, doc any) (s *gojsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &SchemaError{PayloadType: payloadType, Detail: fmt.Sprintf("gojsonschema panicked while compiling: %v", r), Err: ErrInternal}
		}
	}()
	sl := gojsonschema.NewSchemaLoader()
	sl.Validate = false // metaschema validation would try to fetch the 2020-12 metaschema
	s, err = sl.Compile(docLoader{doc})
	if err != nil {
		sentinel := ErrInvalidSchema
		if errors.Is(err, ErrRemoteRef) {
			sentinel = ErrRemoteRef
		}
		return nil, &SchemaError{PayloadType: payloadType, Detail: "gojsonschema: " + err.Error(), Err: sentinel}
	}
	return s, nil
}
