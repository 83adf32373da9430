package main

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// jsonProblem says what is wrong with a JSON document a person wrote (a
// key file, the contexts file) in words: what, and where, as a JSON
// pointer, without the Go types the decoder names.
func jsonProblem(err error) string {
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &sem):
		where := pointerWords(sem.JSONPointer)
		if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
			return "an unknown field at " + where
		}
		if errors.As(sem.Err, &syn) {
			return syntaxWords(syn)
		}
		got, ok := kindWords[sem.JSONKind]
		if !ok {
			got = "a value"
		}
		if want := wantWords(sem.GoType); want != "" {
			return got + " at " + where + ", want " + want
		}
		return got + " at " + where + " where it does not belong"
	case errors.As(err, &syn):
		return syntaxWords(syn)
	}
	return "not JSON"
}

func syntaxWords(syn *jsontext.SyntacticError) string {
	at := strconv.FormatInt(syn.ByteOffset, 10)
	switch {
	case errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return "a member given twice at " + pointerWords(syn.JSONPointer)
	case syn.Err != nil && strings.Contains(syn.Err.Error(), "UTF-8"):
		return "invalid UTF-8 at byte " + at
	}
	return "invalid JSON at byte " + at
}

func pointerWords(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return string(p)
}

// wantWords names the kind of JSON value a Go type decodes from.
func wantWords(t reflect.Type) string {
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return ""
}

// kindWords name the kinds of JSON value.
var kindWords = map[jsontext.Kind]string{
	'{': "an object", '[': "an array", '"': "a string", '0': "a number",
	't': "a boolean", 'f': "a boolean", 'n': "null",
}
