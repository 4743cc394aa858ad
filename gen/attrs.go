package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dave/jennifer/jen"
)

// Typed attribute values. A C function that gets or sets an attribute
// through void * (cuMemPoolGetAttribute(pool, attr, void *value)) gets a
// generic companion that takes or returns the value as a T, and refuses,
// before the call, a T that is not the type of attr's value:
//
//	MemPoolGetAttributeOf[T any](pool MemoryPool, attr MemPool_attribute) (T, error)
//
// The functions are the package's Attrs, which the getattr and setattr
// lines of its section of gen/packages.txt name. The type of each attribute's value comes from the headers where they
// state it in the enumerator's comment, "(value type = cuuint64_t)", and
// otherwise from valueTypes, data taken from the functions' documentation
// (which says it in prose: "The type of data must be CUcontext *"). The
// enum's ValueType method reports it; an attribute without one is refused.
// A T fits when it is that type, an integer type of the same size (an enum,
// or uint32 for unsigned int), or, for a list (int[]), an array of one.

// companionNote is the sentence of an attribute function's doc that names
// its typed companion, or "".
func (e *emitter) companionNote(fn *Func) string {
	if _, ok := e.pkg.Attrs[fn.CName]; !ok {
		return ""
	}
	return wrap(fmt.Sprintf("[%sOf] takes the value as a T of the attribute's type, checked before the call.", fn.GoName))
}

// pluralNote is the sentence of a plural attribute function's doc that
// names its typed alternative, or "".
func (e *emitter) pluralNote(fn *Func) string {
	one, ok := e.pkg.AttrPlurals[fn.CName]
	if !ok {
		return ""
	}
	for _, f := range e.pkg.Funcs {
		if f.CName == one {
			return wrap(fmt.Sprintf("[%sOf] gets one attribute as a value of its type, checked, with nothing to pin.", f.GoName))
		}
	}
	return ""
}

// valueTypes are the C types of attribute values that the headers state
// only in the prose of the functions that take them, by enumerator. A
// "boolean" that a call writes is read as an unsigned int, which holds a
// one-byte answer as well (cuPointerSetAttribute documents SYNC_MEMOPS as
// one); the coredump settings' Bool is C's bool, whose size the call checks.
var valueTypes = map[string]string{
	// cuPointerGetAttribute, cuPointerSetAttribute.
	"CU_POINTER_ATTRIBUTE_CONTEXT":                    "CUcontext",
	"CU_POINTER_ATTRIBUTE_MEMORY_TYPE":                "unsigned int",
	"CU_POINTER_ATTRIBUTE_DEVICE_POINTER":             "CUdeviceptr",
	"CU_POINTER_ATTRIBUTE_HOST_POINTER":               "void *",
	"CU_POINTER_ATTRIBUTE_P2P_TOKENS":                 "CUDA_POINTER_ATTRIBUTE_P2P_TOKENS",
	"CU_POINTER_ATTRIBUTE_SYNC_MEMOPS":                "unsigned int",
	"CU_POINTER_ATTRIBUTE_BUFFER_ID":                  "unsigned long long",
	"CU_POINTER_ATTRIBUTE_IS_MANAGED":                 "unsigned int",
	"CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL":             "int",
	"CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE": "unsigned int",
	"CU_POINTER_ATTRIBUTE_RANGE_START_ADDR":           "CUdeviceptr",
	"CU_POINTER_ATTRIBUTE_RANGE_SIZE":                 "size_t",
	"CU_POINTER_ATTRIBUTE_MAPPED":                     "unsigned int",
	"CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES":       "unsigned int",
	"CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE": "unsigned int",
	"CU_POINTER_ATTRIBUTE_ACCESS_FLAGS":               "unsigned int",
	"CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE":             "CUmemoryPool",
	"CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE":   "unsigned int",
	// cuMemRangeGetAttribute: "a 32-bit integer", "an array of 32-bit
	// integers", "a CUmemLocationType".
	"CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY":                 "int",
	"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION":          "int",
	"CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY":                 "int[]",
	"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION":      "int",
	"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE":     "enum CUmemLocationType_enum",
	"CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID":       "int",
	"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE": "enum CUmemLocationType_enum",
	"CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID":   "int",
	// cudaMemRangeGetAttribute, likewise.
	"cudaMemRangeAttributeReadMostly":               "int",
	"cudaMemRangeAttributePreferredLocation":        "int",
	"cudaMemRangeAttributeAccessedBy":               "int[]",
	"cudaMemRangeAttributeLastPrefetchLocation":     "int",
	"cudaMemRangeAttributePreferredLocationType":    "enum cudaMemLocationType",
	"cudaMemRangeAttributePreferredLocationId":      "int",
	"cudaMemRangeAttributeLastPrefetchLocationType": "enum cudaMemLocationType",
	"cudaMemRangeAttributeLastPrefetchLocationId":   "int",
	// cuCoredumpGetAttribute and the others: "Bool", "String of up to 1023
	// characters", "An integer".
	"CU_COREDUMP_ENABLE_ON_EXCEPTION": "bool",
	"CU_COREDUMP_TRIGGER_HOST":        "bool",
	"CU_COREDUMP_LIGHTWEIGHT":         "bool",
	"CU_COREDUMP_ENABLE_USER_TRIGGER": "bool",
	"CU_COREDUMP_FILE":                "char[]",
	"CU_COREDUMP_PIPE":                "char[]",
	"CU_COREDUMP_GENERATION_FLAGS":    "int",
}

// reValueType finds the value type an enumerator's comment states.
var reValueType = regexp.MustCompile(`\(value type = ([A-Za-z_][A-Za-z0-9_ ]*?)\s*\)`)

// scalarValues are the Go types of the C scalar spellings of valueTypes
// and the headers' comments.
var scalarValues = map[string]string{
	"int": "int32", "unsigned int": "uint32", "cuuint64_t": "uint64", "cuuint32_t": "uint32",
	"unsigned long long": "uint64", "size_t": "uint64", "bool": "bool", "char": "byte",
}

// valueGoType renders the Go type of a C value type, or reports that the
// package has none: int -> int32, CUcontext -> Context, int[] -> []int32.
func (e *emitter) valueGoType(c string) (jen.Code, bool) {
	if elem, ok := strings.CutSuffix(c, "[]"); ok {
		t, ok := e.valueGoType(elem)
		return jen.Index().Add(t), ok
	}
	if c == "void *" {
		return jen.Qual("unsafe", "Pointer"), true
	}
	if g, ok := scalarValues[c]; ok {
		return jen.Id(g), true
	}
	for _, t := range e.pkg.Typedefs {
		if t.CName == c {
			return jen.Id(t.GoName), true
		}
	}
	for _, en := range e.pkg.Enums {
		if en.CName == c {
			return jen.Id(en.GoName), true
		}
	}
	for _, r := range e.pkg.Records {
		if r.CName == c {
			return jen.Id(r.GoName), true
		}
	}
	return nil, false
}

// attrEnums returns the enums, by Go name, whose values the package's Attrs
// take.
func (e *emitter) attrEnums() map[string]*Enum {
	out := map[string]*Enum{}
	fns := e.pkg.Attrs
	for _, fn := range e.pkg.Funcs {
		a, ok := fns[fn.CName]
		if !ok {
			continue
		}
		for _, p := range fn.Params {
			if p.CName == a.Attr && p.Type.Kind == Named && p.Type.Pkg == "" {
				for _, en := range e.pkg.Enums {
					if en.GoName == p.Type.Go {
						out[en.GoName] = en
					}
				}
			}
		}
	}
	return out
}

// valueType returns the C type of an enumerator's value, or "".
func valueType(v EnumValue) string {
	if m := reValueType.FindStringSubmatch(v.Doc); m != nil {
		return m[1]
	}
	return valueTypes[v.CName]
}

// attrTypes emits the ValueType method of each attribute enum, and
// ValueTypeError and the helpers of the companions.
func (e *emitter) attrTypes(f *jen.File) {
	enums := e.attrEnums()
	if len(enums) == 0 {
		return
	}
	for _, name := range sortedKeys(enums) {
		en := enums[name]
		var cases []jen.Code
		seen := map[int64]bool{}
		for _, v := range en.Values {
			c := valueType(v)
			if c == "" || seen[v.Value] {
				continue
			}
			t, ok := e.valueGoType(c)
			if !ok {
				panic(fmt.Sprintf("%s: the value type %s of %s is not a type of package %s", en.CName, c, v.CName, e.pkg.Name))
			}
			seen[v.Value] = true
			cases = append(cases, jen.Case(jen.Id(v.GoName)).Block(jen.Return(jen.Qual("reflect", "TypeFor").Types(t).Call())))
		}
		f.Add(docComment(wrap(fmt.Sprintf("ValueType returns the Go type of the value of attribute a, as the headers "+
			"give its C type (\"value type = cuuint64_t\" is uint64, int is int32, a list of int []int32), or nil "+
			"for an attribute whose type gen does not know. The functions that take a value of %s as a T (the ones "+
			"named Of) refuse a T that does not fit it.", name))))
		f.Func().Params(jen.Id("a").Id(name)).Id("ValueType").Params().Qual("reflect", "Type").Block(
			jen.Switch(jen.Id("a")).Block(cases...),
			jen.Return(jen.Nil()),
		)
	}
	f.Add(docComment(wrap("ValueTypeError reports a value whose type does not fit an attribute's, " +
		"refused before the call by a function named Of: Want is the attribute's ValueType, nil where gen " +
		"knows none, and Got the type given.")))
	f.Type().Id("ValueTypeError").Struct(
		jen.Id("Attribute").Qual("fmt", "Stringer"),
		jen.List(jen.Id("Want"), jen.Id("Got")).Qual("reflect", "Type"),
	)
	pkg := e.pkg.Name
	f.Add(docComment("Error names the attribute and both types."))
	f.Func().Params(jen.Id("e").Op("*").Id("ValueTypeError")).Id("Error").Params().String().Block(
		jen.If(jen.Id("e").Dot("Want").Op("==").Nil()).Block(
			jen.Return(jen.Lit(pkg+": ").Op("+").Id("e").Dot("Attribute").Dot("String").Call().Op("+").Lit(": the headers give no type of its value: pass a pointer to it to the function that takes unsafe.Pointer")),
		),
		jen.Return(jen.Lit(pkg+": ").Op("+").Id("e").Dot("Attribute").Dot("String").Call().Op("+").Lit(" takes a value of type ").Op("+").Id("e").Dot("Want").Dot("String").Call().Op("+").Lit(", not ").Op("+").Id("e").Dot("Got").Dot("String").Call()),
	)
	f.Add(docComment("checkValue returns a *ValueTypeError unless T fits want, attr's value type."))
	f.Func().Id("checkValue").Types(jen.Id("T").Any()).Params(jen.Id("attr").Qual("fmt", "Stringer"), jen.Id("want").Qual("reflect", "Type")).Error().Block(
		jen.If(jen.Id("got").Op(":=").Qual("reflect", "TypeFor").Types(jen.Id("T")).Call(), jen.Id("want").Op("==").Nil().Op("||").Op("!").Id("valueFits").Call(jen.Id("got"), jen.Id("want"))).Block(
			jen.Return(jen.Op("&").Id("ValueTypeError").Values(jen.Id("Attribute").Op(":").Id("attr"), jen.Id("Want").Op(":").Id("want"), jen.Id("Got").Op(":").Id("got"))),
		),
		jen.Return(jen.Nil()),
	)
	f.Add(docComment("valueFits reports whether a value of type got may stand for one of type want:\n" +
		"the same type, an integer type of the same size, or for a list an array of\n" +
		"elements that fit."))
	f.Func().Id("valueFits").Params(jen.List(jen.Id("got"), jen.Id("want")).Qual("reflect", "Type")).Bool().Block(
		jen.If(jen.Id("got").Op("==").Id("want")).Block(jen.Return(jen.True())),
		jen.If(jen.Id("want").Dot("Kind").Call().Op("==").Qual("reflect", "Slice")).Block(
			jen.Return(jen.Id("got").Dot("Kind").Call().Op("==").Qual("reflect", "Array").Op("&&").Id("got").Dot("Len").Call().Op(">").Lit(0).Op("&&").Id("valueFits").Call(jen.Id("got").Dot("Elem").Call(), jen.Id("want").Dot("Elem").Call())),
		),
		jen.Id("integer").Op(":=").Func().Params(jen.Id("t").Qual("reflect", "Type")).Bool().Block(
			jen.Id("k").Op(":=").Id("t").Dot("Kind").Call(),
			jen.Return(jen.Id("k").Op(">=").Qual("reflect", "Int").Op("&&").Id("k").Op("<=").Qual("reflect", "Uintptr")),
		),
		jen.Return(jen.Id("got").Dot("Size").Call().Op("==").Id("want").Dot("Size").Call().Op("&&").Id("integer").Call(jen.Id("got")).Op("&&").Id("integer").Call(jen.Id("want"))),
	)
}

// attrCompanion emits fn's companion named Of, if fn is one of the
// package's Attrs.
func (e *emitter) attrCompanion(f *jen.File, fn *Func) {
	a, ok := e.pkg.Attrs[fn.CName]
	if !ok {
		return
	}
	var attr *Param
	for i, p := range fn.Params {
		if p.CName == a.Attr {
			attr = &fn.Params[i]
		}
	}
	if attr == nil || attr.Type.Kind != Named {
		panic(fmt.Sprintf("%s: its getattr or setattr line names no attribute parameter %s", fn.CName, a.Attr))
	}
	name := fn.GoName + "Of"
	var params, args, pre []jen.Code
	found := 0
	for _, p := range fn.Params {
		switch p.CName {
		case a.Value:
			found++
			v := "v"
			if a.Set {
				v = "value"
				params = append(params, jen.Id("value").Id("T"))
			}
			args = append(args, jen.Qual("unsafe", "Pointer").Call(jen.Op("&").Id(v)))
		case a.Size:
			found++
			v := "value"
			if !a.Set {
				v = "v"
			}
			size := jen.Uint64().Call(jen.Qual("unsafe", "Sizeof").Call(jen.Id(v)))
			if p.Type.Kind == Pointer {
				pre = append(pre, jen.Id("size").Op(":=").Add(size))
				args = append(args, jen.Op("&").Id("size"))
			} else {
				args = append(args, size)
			}
		default:
			params = append(params, jen.Id(p.GoName).Add(goType(p.Type)))
			args = append(args, jen.Id(p.GoName))
		}
	}
	if want := 1 + min(len(a.Size), 1); found != want {
		panic(fmt.Sprintf("%s: its getattr or setattr line names parameters it lacks", fn.CName))
	}
	check := jen.Id("checkValue").Types(jen.Id("T")).Call(jen.Id(attr.GoName), jen.Id(attr.GoName).Dot("ValueType").Call())
	call := jen.Id(fn.GoName).Call(args...)
	verb, how := "takes", "a value"
	if !a.Set {
		verb, how = "returns", "the value"
	}
	text := wrap(fmt.Sprintf("%s calls %s with %s of type T, which it %s: T must fit the type "+
		"of %s's value, [%s.ValueType] (the type itself, an integer type of the same size, or for a list an "+
		"array of it); another T is refused with a *[ValueTypeError] before the call.", name, fn.GoName, how, verb, attr.GoName, attr.Type.Go))
	f.Add(docComment(text))
	body := []jen.Code{}
	if a.Set {
		body = append(body, jen.If(jen.Err().Op(":=").Add(check), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
		body = append(body, pre...)
		body = append(body, jen.Return(call))
		f.Func().Id(name).Types(jen.Id("T").Any()).Params(params...).Error().Block(body...)
		return
	}
	body = append(body,
		jen.Var().Id("v").Id("T"),
		jen.If(jen.Err().Op(":=").Add(check), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id("v"), jen.Err())))
	body = append(body, pre...)
	body = append(body, jen.Err().Op(":=").Add(call), jen.Return(jen.Id("v"), jen.Err()))
	f.Func().Id(name).Types(jen.Id("T").Any()).Params(params...).Parens(jen.List(jen.Id("T"), jen.Error())).Block(body...)
}

// String buffers. A function that writes a string into a buffer the caller
// gives, a char * followed by its length as an int (cuDeviceGetName(char
// *name, int len, CUdevice dev)), gets a companion named String that takes
// the length alone, makes the buffer and returns the string up to its NUL:
// DeviceGetNameString(len_ int32, dev Device) (string, error).

// stringBuffer returns the index of fn's char * parameter that its next
// parameter, an int, gives the length of, or -1.
func stringBuffer(fn *Func) int {
	for i := 0; i+1 < len(fn.Params); i++ {
		t, n := fn.Params[i].Type, fn.Params[i+1].Type
		if t.Kind == Pointer && !t.Const && t.Elem != nil && t.Elem.Kind == Scalar && t.Elem.C == "char" &&
			n.Kind == Scalar && n.C == "int" {
			return i
		}
	}
	return -1
}

// stringCompanion emits fn's companion named String, if fn writes a string
// into a buffer of a given length.
func (e *emitter) stringCompanion(f *jen.File, fn *Func) {
	i := stringBuffer(fn)
	name := fn.GoName + "String"
	if i < 0 || e.taken(name) {
		return
	}
	buf, n := fn.Params[i], fn.Params[i+1]
	var params, args []jen.Code
	for k, p := range fn.Params {
		if k == i {
			args = append(args, jen.Op("&").Id("b").Index(jen.Lit(0)))
			continue
		}
		params = append(params, jen.Id(p.GoName).Add(goType(p.Type)))
		args = append(args, jen.Id(p.GoName))
	}
	f.Add(docComment(wrap(fmt.Sprintf("%s calls %s with a buffer of %s bytes, which it makes, and returns "+
		"the string the call writes to %s, up to its NUL; %s must be positive.", name, fn.GoName, n.GoName, buf.GoName, n.GoName))))
	f.Func().Id(name).Params(params...).Parens(jen.List(jen.String(), jen.Error())).Block(
		jen.If(jen.Id(n.GoName).Op("<=").Lit(0)).Block(
			jen.Return(jen.Lit(""), jen.Qual("fmt", "Errorf").Call(jen.Lit(e.pkg.Name+": "+name+": length %d is not positive"), jen.Id(n.GoName))),
		),
		jen.Id("b").Op(":=").Make(jen.Index().Byte(), jen.Id(n.GoName)),
		jen.If(jen.Err().Op(":=").Id(fn.GoName).Call(args...), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(""), jen.Err())),
		jen.If(jen.Id("k").Op(":=").Qual("bytes", "IndexByte").Call(jen.Id("b"), jen.Lit(0)), jen.Id("k").Op(">=").Lit(0)).Block(
			jen.Id("b").Op("=").Id("b").Index(jen.Empty(), jen.Id("k")),
		),
		jen.Return(jen.String().Call(jen.Id("b")), jen.Nil()),
	)
}
