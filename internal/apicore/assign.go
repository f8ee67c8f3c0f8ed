package apicore

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// errNotAssigned is Assign declining a value: one of a type or shape it does not take as
// encoding/json would, which the caller decodes from the bytes instead.
var errNotAssigned = errors.New("apicore: the value is not assigned: decode the bytes")

// Assign sets dst (a non-nil pointer) to v, a value DecodeJSON made, as json.Unmarshal would
// set it from the bytes v was decoded from: so a request body is decoded once, into the
// values the validator checks, and the handler's typed request is built from those values.
// Object members match struct fields by their exact JSON names (the spec's schemas refuse
// other names), and a member named twice is the last one, as the validator saw it (where
// json.Unmarshal would merge two objects of one name into a struct). Types that decode
// themselves (json.Unmarshaler) are given their value re-encoded. A value it does not take
// (a type mismatch, a number its field cannot hold, a Go type of a kind no request uses) is
// an error, after which dst may be partly set: reset it, and decode the bytes.
func Assign(dst any, v any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errNotAssigned
	}
	return assign(rv.Elem(), v)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func assign(dst reflect.Value, v any) error {
	t := dst.Type()
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b)
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshaler) {
		s, ok := v.(string)
		if !ok {
			return errNotAssigned
		}
		return dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			dst.SetZero()
		}
		return nil // null leaves any other kind as it is
	}
	switch t.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(t.Elem()))
		}
		return assign(dst.Elem(), v)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return errNotAssigned
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return errNotAssigned
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return errNotAssigned
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || dst.OverflowInt(i) {
			return errNotAssigned
		}
		dst.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return errNotAssigned
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || dst.OverflowUint(u) {
			return errNotAssigned
		}
		dst.SetUint(u)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return errNotAssigned
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil || dst.OverflowFloat(f) {
			return errNotAssigned
		}
		dst.SetFloat(f)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return errNotAssigned
		}
		plain, err := plainValue(v)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(&plain).Elem())
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return errNotAssigned
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := assign(s.Index(i), item); err != nil {
				return err
			}
		}
		dst.Set(s)
	case reflect.Map:
		members, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshaler) {
			return errNotAssigned
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(t, len(members)))
		}
		for k, member := range members {
			e := reflect.New(t.Elem()).Elem()
			if err := assign(e, member); err != nil {
				return err
			}
			dst.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
		}
	case reflect.Struct:
		members, ok := v.(map[string]any)
		if !ok {
			return errNotAssigned
		}
		fields := fieldsOf(t)
		if fields.unsupported {
			return errNotAssigned
		}
		for name, member := range members {
			i, ok := fields.byName[name]
			if !ok {
				if fields.folds(name) {
					return errNotAssigned // json.Unmarshal would take it for a field
				}
				continue // json.Unmarshal ignores it too
			}
			if err := assign(dst.Field(i), member); err != nil {
				return err
			}
		}
	default:
		return errNotAssigned
	}
	return nil
}

// plainValue is v as json.Unmarshal decodes into an empty interface: numbers are float64.
func plainValue(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, errNotAssigned
		}
		return f, nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			p, err := plainValue(item)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, member := range v {
			p, err := plainValue(member)
			if err != nil {
				return nil, err
			}
			out[k] = p
		}
		return out, nil
	}
	return v, nil
}

// structFields are a struct type's fields by JSON name, as encoding/json names them.
type structFields struct {
	byName map[string]int
	// unsupported: a field encoding/json treats specially (embedded, or tagged ",string")
	unsupported bool
}

// folds tells whether name matches a field's name but for case, as json.Unmarshal matches.
func (f *structFields) folds(name string) bool {
	for field := range f.byName {
		if strings.EqualFold(field, name) {
			return true
		}
	}
	return false
}

var fieldCache sync.Map // reflect.Type -> *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{byName: map[string]int{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			f.unsupported = true
			continue
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			f.unsupported = true
		}
		if name == "" {
			name = sf.Name
		}
		f.byName[name] = i
	}
	fieldCache.Store(t, f)
	return f
}
