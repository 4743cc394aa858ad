package main

import "modernc.org/cc/v4"

// scalars maps C arithmetic kinds to Go types and cgo spellings.
var scalars = map[cc.Kind][2]string{
	cc.Bool:      {"bool", "_Bool"},
	cc.Char:      {"byte", "char"},
	cc.SChar:     {"int8", "schar"},
	cc.UChar:     {"uint8", "uchar"},
	cc.Short:     {"int16", "short"},
	cc.UShort:    {"uint16", "ushort"},
	cc.Int:       {"int32", "int"},
	cc.UInt:      {"uint32", "uint"},
	cc.Long:      {"int64", "long"},
	cc.ULong:     {"uint64", "ulong"},
	cc.LongLong:  {"int64", "longlong"},
	cc.ULongLong: {"uint64", "ulonglong"},
	cc.Float:     {"float32", "float"},
	cc.Double:    {"float64", "double"},
}

// scalar returns the Go scalar for an arithmetic C type, or nil.
func (p *parser) scalar(t cc.Type) *Type {
	k := t.Kind()
	if k == cc.Enum {
		k = t.(*cc.EnumType).UnderlyingType().Kind()
	}
	s, ok := scalars[k]
	if !ok {
		return nil
	}
	if td := t.Typedef(); td != nil && !p.own(td.Position().Filename) {
		s[1] = td.Name() // size_t, uint32_t: cgo spells these as C.size_t
	}
	return &Type{Kind: Scalar, Go: s[0], C: s[1]}
}

// typ maps a C type to Go, or returns nil when it cannot.
func (p *parser) typ(t cc.Type) *Type {
	if td := t.Typedef(); td != nil {
		if goName, ok := p.typeC[td.Name()]; ok && p.own(td.Position().Filename) {
			return p.named(goName, td.Name(), t)
		}
		if x := p.ext[td.Name()]; x != nil {
			return x
		}
	}
	return p.shape(t)
}

// shape maps a C type to Go by its structure, ignoring its own typedef name.
func (p *parser) shape(t cc.Type) *Type {
	switch x := t.(type) {
	case *cc.PredefinedType:
		if x.Kind() == cc.Void {
			return nil
		}
		return p.scalar(x)
	case *cc.PointerType:
		e := x.Elem()
		if e.Kind() == cc.Function {
			return &Type{Kind: FuncPtr}
		}
		if e.Kind() == cc.Void {
			return &Type{Kind: Pointer, Const: e.Attributes().IsConst()}
		}
		et := p.typ(e)
		if et == nil {
			return nil
		}
		return &Type{Kind: Pointer, Elem: et, Const: e.Attributes().IsConst()}
	case *cc.ArrayType:
		et := p.typ(x.Elem())
		if et == nil || x.IsVLA() {
			return nil
		}
		return &Type{Kind: Array, Len: x.Len(), Elem: et}
	case *cc.StructType, *cc.UnionType, *cc.EnumType:
		c := tagName(t)
		if goName, ok := p.typeC[c]; ok {
			return p.named(goName, c, t)
		}
		if x := p.ext[c]; x != nil {
			return x
		}
		if x, ok := t.(*cc.EnumType); ok {
			return p.scalar(x)
		}
	}
	return nil
}

func (p *parser) named(goName, c string, t cc.Type) *Type {
	r := &Type{Kind: Named, Go: goName, C: c}
	switch t.Kind() {
	case cc.Struct:
		r.Class = ClassStruct
	case cc.Union:
		r.Class = ClassUnion
	case cc.Enum:
		r.Class, r.Under = ClassEnum, p.scalar(t)
	case cc.Ptr:
		if t.(*cc.PointerType).Elem().Kind() == cc.Function {
			r.Class = ClassFuncPtr
		} else {
			r.Class = ClassHandle
		}
	case cc.Array:
		return p.shape(t) // the typedef is an alias of the array
	default:
		r.Class, r.Under = ClassScalar, p.scalar(t)
		if r.Under == nil {
			return nil
		}
	}
	return r
}
