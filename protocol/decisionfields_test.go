package protocol

import (
	"reflect"
	"testing"
)

// TestDecisionWriterKnowsEveryField guards the hand-written
// RoutingDecision writer (appendJSON): every field of the struct is set to
// a non-zero value found by reflection, so a field added to the struct and
// not to the writer makes checkDecision fail (JSON v2 writes it, the
// writer does not). A field of a kind fill does not know fails the test:
// extend fill and the writer together.
func TestDecisionWriterKnowsEveryField(t *testing.T) {
	var d RoutingDecision
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !fill(v.Field(i)) {
			t.Fatalf("RoutingDecision.%s is of kind %s, which this test does not fill: teach fill and appendJSON", f.Name, f.Type)
		}
	}
	checkDecision(t, &d)
	for i := range v.NumField() {
		// Each field alone, so that one the writer drops is not hidden by
		// another that it writes in its place.
		var one RoutingDecision
		fill(reflect.ValueOf(&one).Elem().Field(i))
		checkDecision(t, &one)
	}
}

// fill sets v to a non-zero value of its type and reports whether it knew
// the type.
func fill(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("agent:x \"q\" <é>")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Float64, reflect.Float32:
		v.SetFloat(0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if !fill(s.Index(0)) {
			return false
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		if !fill(k) || !fill(e) {
			return false
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		return false
	}
	return true
}
