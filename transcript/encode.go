package transcript

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// marshalJSON encodes v like encoding/json with HTML escaping off, except
// that a non-finite float anywhere in v (a struct field, a value nested in a
// map[string]any of tool arguments) is written as null instead of failing
// the whole line. A transcript must never lose an event to a NaN that a model
// server put into a reply.
//
// encoding/json does the work whenever it can, so ordinary events get its
// exact output; only a value it refuses as unsupported (a NaN or an infinity)
// goes through lenientEncoder, which follows the same rules.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	if err == nil {
		return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
	}
	var unsupported *json.UnsupportedValueError
	if !errors.As(err, &unsupported) {
		return nil, err
	}
	var e lenientEncoder
	if err := e.value(reflect.ValueOf(v), 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// errEncodeTooDeep stops the lenient encoder on cyclic or absurdly nested values,
// which encoding/json also refuses.
var errEncodeTooDeep = errors.New("json: value nested too deeply (cycle?)")

// encMaxDepth matches the nesting at which encoding/json starts looking
// for cycles.
const encMaxDepth = 1000

var (
	encMarshalerType     = reflect.TypeFor[json.Marshaler]()
	encTextMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	encIsZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
	encNumberType        = reflect.TypeFor[json.Number]()
)

// lenientEncoder is a reflection encoder that mirrors encoding/json (field
// names and dominance, omitempty, omitzero, the string option, Marshaler and
// TextMarshaler, map key sorting, []byte as base64) and writes non-finite
// floats as null.
type lenientEncoder struct {
	buf []byte
}

func (e *lenientEncoder) null() { e.buf = append(e.buf, "null"...) }

func (e *lenientEncoder) value(v reflect.Value, depth int) error {
	if depth > encMaxDepth {
		return errEncodeTooDeep
	}
	if !v.IsValid() {
		e.null()
		return nil
	}
	t := v.Type()
	// Same precedence as encoding/json: pointer-receiver methods only on
	// addressable values, then value methods, JSON before text.
	if t.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(encMarshalerType) {
		return e.marshaler(v.Addr())
	}
	if t.Implements(encMarshalerType) {
		return e.marshaler(v)
	}
	if t.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(encTextMarshalerType) {
		return e.textMarshaler(v.Addr())
	}
	if t.Implements(encTextMarshalerType) {
		return e.textMarshaler(v)
	}
	switch v.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32:
		e.float(v.Float(), 32)
	case reflect.Float64:
		e.float(v.Float(), 64)
	case reflect.String:
		if t == encNumberType {
			return e.number(v.String())
		}
		e.buf = appendJSONString(e.buf, v.String())
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.null()
			return nil
		}
		return e.value(v.Elem(), depth+1)
	case reflect.Struct:
		return e.structValue(v, depth)
	case reflect.Map:
		return e.mapValue(v, depth)
	case reflect.Slice:
		if v.IsNil() {
			e.null()
			return nil
		}
		if encIsByteSlice(t) {
			e.buf = append(e.buf, '"')
			e.buf = base64.StdEncoding.AppendEncode(e.buf, v.Bytes())
			e.buf = append(e.buf, '"')
			return nil
		}
		return e.array(v, depth)
	case reflect.Array:
		return e.array(v, depth)
	default:
		return &json.UnsupportedTypeError{Type: t}
	}
	return nil
}

func (e *lenientEncoder) float(f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.null()
		return
	}
	e.buf = appendJSONFloat(e.buf, f, bits)
}

func (e *lenientEncoder) number(s string) error {
	if s == "" {
		s = "0"
	}
	if !isJSONNumber(s) {
		return fmt.Errorf("json: invalid number literal %q", s)
	}
	e.buf = append(e.buf, s...)
	return nil
}

func (e *lenientEncoder) marshaler(v reflect.Value) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.null()
		return nil
	}
	m, ok := v.Interface().(json.Marshaler)
	if !ok { // a nil interface value
		e.null()
		return nil
	}
	b, err := m.MarshalJSON()
	if err != nil {
		// A foreign MarshalJSON that tripped over a non-finite float is
		// treated like that float: null, not a lost line.
		var unsupported *json.UnsupportedValueError
		if errors.As(err, &unsupported) {
			e.null()
			return nil
		}
		return fmt.Errorf("json: calling MarshalJSON for type %s: %w", v.Type(), err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return fmt.Errorf("json: MarshalJSON for type %s returned invalid JSON: %w", v.Type(), err)
	}
	e.buf = append(e.buf, out.Bytes()...)
	return nil
}

func (e *lenientEncoder) textMarshaler(v reflect.Value) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		e.null()
		return nil
	}
	m, ok := v.Interface().(encoding.TextMarshaler)
	if !ok {
		e.null()
		return nil
	}
	b, err := m.MarshalText()
	if err != nil {
		return fmt.Errorf("json: calling MarshalText for type %s: %w", v.Type(), err)
	}
	e.buf = appendJSONString(e.buf, string(b))
	return nil
}

func (e *lenientEncoder) array(v reflect.Value, depth int) error {
	e.buf = append(e.buf, '[')
	for i := range v.Len() {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

func (e *lenientEncoder) mapValue(v reflect.Value, depth int) error {
	kt := v.Type().Key()
	switch kt.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
	default:
		if !kt.Implements(encTextMarshalerType) {
			return &json.UnsupportedTypeError{Type: v.Type()}
		}
	}
	if v.IsNil() {
		e.null()
		return nil
	}
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	for iter := v.MapRange(); iter.Next(); {
		k, err := encMapKey(iter.Key())
		if err != nil {
			return err
		}
		entries = append(entries, entry{k, iter.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	e.buf = append(e.buf, '{')
	for i, en := range entries {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendJSONString(e.buf, en.key)
		e.buf = append(e.buf, ':')
		if err := e.value(en.val, depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// encMapKey renders a map key the way encoding/json does: string kinds as is,
// then TextMarshaler, then integers in decimal.
func encMapKey(k reflect.Value) (string, error) {
	if k.Kind() == reflect.String {
		return k.String(), nil
	}
	if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
		if k.Kind() == reflect.Pointer && k.IsNil() {
			return "", nil
		}
		b, err := tm.MarshalText()
		if err != nil {
			return "", fmt.Errorf("json: calling MarshalText for map key %s: %w", k.Type(), err)
		}
		return string(b), nil
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10), nil
	}
	return "", &json.UnsupportedTypeError{Type: k.Type()}
}

func (e *lenientEncoder) structValue(v reflect.Value, depth int) error {
	e.buf = append(e.buf, '{')
	first := true
	for _, f := range encFields(v.Type()) {
		fv, ok := encFieldByIndex(v, f.index)
		if !ok {
			continue // promoted through a nil embedded pointer
		}
		if f.omitEmpty && encIsEmpty(fv) || f.omitZero && f.isZero(fv) {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		e.buf = append(e.buf, f.key...)
		var err error
		if f.quoted {
			err = e.quoted(fv, depth+1)
		} else {
			err = e.value(fv, depth+1)
		}
		if err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// quoted writes a scalar field tagged `json:",string"` inside a string.
func (e *lenientEncoder) quoted(v reflect.Value, depth int) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			e.null()
			return nil
		}
		v = v.Elem()
	}
	if v.Type().Implements(encMarshalerType) || v.Type().Implements(encTextMarshalerType) {
		return e.value(v, depth)
	}
	switch v.Kind() {
	case reflect.String:
		if v.Type() == encNumberType {
			break
		}
		e.buf = appendJSONString(e.buf, string(appendJSONString(nil, v.String())))
		return nil
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			e.null()
			return nil
		}
	}
	e.buf = append(e.buf, '"')
	if err := e.value(v, depth); err != nil {
		return err
	}
	e.buf = append(e.buf, '"')
	return nil
}

func encFieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for _, i := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v, true
}

func encIsEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

func encIsByteSlice(t reflect.Type) bool {
	if t.Elem().Kind() != reflect.Uint8 {
		return false
	}
	p := reflect.PointerTo(t.Elem())
	return !p.Implements(encMarshalerType) && !p.Implements(encTextMarshalerType)
}

// encField is one JSON member of a struct type, as encoding/json resolves it.
type encField struct {
	name      string
	key       []byte // `"name":`
	tagged    bool
	index     []int
	typ       reflect.Type
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool
	quoted    bool
}

var encFieldCache sync.Map // reflect.Type -> []encField

func encFields(t reflect.Type) []encField {
	if f, ok := encFieldCache.Load(t); ok {
		return f.([]encField)
	}
	f, _ := encFieldCache.LoadOrStore(t, encTypeFields(t))
	return f.([]encField)
}

// encTypeFields ports encoding/json's field resolution: a breadth-first walk
// of embedded structs where, per name, the shallowest field wins, a tagged
// one breaks a tie, and a remaining tie hides the name altogether.
func encTypeFields(t reflect.Type) []encField {
	var current []encField
	next := []encField{{typ: t}}
	var count map[reflect.Type]int
	nextCount := map[reflect.Type]int{}
	visited := map[reflect.Type]bool{}
	var fields []encField

	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !encValidTag(name) {
					name = ""
				}
				index := append(slices.Clip(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					fld := encField{
						name:      name,
						tagged:    name != "",
						index:     index,
						typ:       ft,
						omitEmpty: encTagHas(opts, "omitempty"),
						omitZero:  encTagHas(opts, "omitzero"),
						quoted:    encTagHas(opts, "string") && encQuotable(ft.Kind()),
					}
					if fld.name == "" {
						fld.name = sf.Name
					}
					fld.key = append(appendJSONString(nil, fld.name), ':')
					fld.isZero = encZeroFunc(sf.Type)
					fields = append(fields, fld)
					if count[f.typ] > 1 {
						// The same embedded type twice at this depth: the
						// duplicate makes the tie-break below drop the name.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, encField{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}

	slices.SortFunc(fields, func(a, b encField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		for advance = 1; i+advance < len(fields); advance++ {
			if fields[i+advance].name != fields[i].name {
				break
			}
		}
		group := fields[i : i+advance]
		if len(group) > 1 && len(group[0].index) == len(group[1].index) && group[0].tagged == group[1].tagged {
			continue // ambiguous: encoding/json omits the name
		}
		out = append(out, group[0])
	}
	slices.SortFunc(out, func(a, b encField) int { return slices.Compare(a.index, b.index) })
	return out
}

// encZeroFunc reports zero values for omitzero, preferring an IsZero method.
func encZeroFunc(t reflect.Type) func(reflect.Value) bool {
	type isZeroer interface{ IsZero() bool }
	switch {
	case t.Kind() == reflect.Interface && t.Implements(encIsZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) ||
				v.Interface().(isZeroer).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(encIsZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(isZeroer).IsZero()
		}
	case t.Implements(encIsZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(isZeroer).IsZero() }
	case reflect.PointerTo(t).Implements(encIsZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				boxed := reflect.New(v.Type()).Elem()
				boxed.Set(v)
				v = boxed
			}
			return v.Addr().Interface().(isZeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}

func encQuotable(k reflect.Kind) bool {
	switch k {
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.String:
		return true
	}
	return false
}

func encTagHas(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

// encValidTag reports whether encoding/json would accept name as a key.
func encValidTag(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// appendJSONFloat formats f as encoding/json does: plain decimal in a middle
// range, exponent form outside it, with a one-digit negative exponent.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s as a JSON string with encoding/json's escaping,
// minus HTML escaping: invalid UTF-8 becomes U+FFFD, control characters,
// U+2028 and U+2029 are escaped, everything else stays raw.
func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes; Encode only fails on the writer, a bytes.Buffer
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') && json.Valid([]byte(s))
}
