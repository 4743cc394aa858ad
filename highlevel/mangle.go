package highlevel

import (
	"strconv"
	"strings"
)

// A paramClass is what a kernel parameter's C++ type allows a Go argument to be.
type paramClass uint8

const (
	paramUnknown  paramClass = iota // a type not understood (class, enum, template parameter that could not be resolved...): only the size is checked
	paramSigned                     // signed integer (char as signed, signed char, short, int, long, long long, __int128 excluded -> unknown)
	paramUnsigned                   // unsigned integer (unsigned char, unsigned short, unsigned int, unsigned long, unsigned long long)
	paramBool                       // bool
	paramFloat                      // float (4 bytes)
	paramDouble                     // double (8 bytes)
	paramHalf                       // __half / _Float16 (DF16_) / __nv_bfloat16 (classes named __half, __nv_bfloat16, also DF16b): 2 bytes
	paramPointer                    // any pointer (T*, const T*, T* __restrict__, pointer to pointer ...)
)

var paramClassNames = [...]string{
	paramUnknown:  "unknown",
	paramSigned:   "signed integer",
	paramUnsigned: "unsigned integer",
	paramBool:     "bool",
	paramFloat:    "float",
	paramDouble:   "double",
	paramHalf:     "half",
	paramPointer:  "pointer",
}

// String returns a C-like name of the class: "unknown", "signed integer", "unsigned integer", "bool", "float", "double", "half", "pointer".
func (c paramClass) String() string {
	if int(c) < len(paramClassNames) {
		return paramClassNames[c]
	}
	return "paramClass(" + strconv.Itoa(int(c)) + ")"
}

// mangledBuiltins maps the one-letter Itanium codes of builtin types to their
// classes. Void (v) is there as a pointee, a return type or a template
// argument; as a parameter it is handled by [mangled.encoding].
var mangledBuiltins = map[byte]paramClass{
	'v': paramUnknown,
	'b': paramBool,
	'c': paramSigned,
	'a': paramSigned,
	'h': paramUnsigned,
	's': paramSigned,
	't': paramUnsigned,
	'i': paramSigned,
	'j': paramUnsigned,
	'l': paramSigned,
	'm': paramUnsigned,
	'x': paramSigned,
	'y': paramUnsigned,
	'n': paramUnknown, // __int128
	'o': paramUnknown, // unsigned __int128
	'f': paramFloat,
	'd': paramDouble,
	'e': paramUnknown, // long double
	'g': paramUnknown, // __float128
	'w': paramUnknown, // wchar_t
}

// mangledDBuiltins maps the two-letter D codes of builtin types to their
// classes; the DF<N> codes are parsed by [mangled.dBuiltin].
var mangledDBuiltins = map[string]paramClass{
	"Dh": paramHalf,    // IEEE half
	"Ds": paramUnknown, // char16_t
	"Di": paramUnknown, // char32_t
	"Du": paramUnknown, // char8_t
	"Dn": paramUnknown, // std::nullptr_t
	"Dd": paramUnknown, // decimal64
	"De": paramUnknown, // decimal128
	"Df": paramUnknown, // decimal32
}

const (
	// maxMangledDepth bounds the nesting of types and template arguments.
	maxMangledDepth = 256
	// maxMangledNumber bounds lengths and indexes; no name comes near it.
	maxMangledNumber = 1 << 20
)

// paramClasses parses an Itanium C++ mangled function name and returns the class of each parameter,
// in order. ok is false when name is not a mangled name (extern "C" kernels, e.g. "saxpy") or when
// the parser meets something it does not handle; then the caller checks sizes only. A function
// taking no parameters (`_Z5emptyv`) gives an empty, non-nil slice and ok true.
func paramClasses(name string) (classes []paramClass, ok bool) {
	rest, ok := strings.CutPrefix(name, "_Z")
	if !ok {
		return nil, false
	}
	m := &mangled{s: rest}
	return m.encoding()
}

// A mangled is the unparsed rest s of a mangled name, with what the parser
// keeps of the part already read: subs, the class of each substitution
// candidate in the order S_, S0_, S1_... number them; targs, the class of each
// template argument of the function, which T_, T0_... refer to; and depth, the
// current nesting of types and template arguments.
type mangled struct {
	s     string
	subs  []paramClass
	targs []paramClass
	depth int
}

// encoding parses <name> <bare-function-type>. The return type of a template
// function comes first; it is skipped.
func (m *mangled) encoding() ([]paramClass, bool) {
	_, targs, ok := m.name()
	if !ok {
		return nil, false
	}
	if targs != nil {
		m.targs = targs
		if _, ok := m.typ(); !ok {
			return nil, false
		}
	}
	if m.s == "v" {
		return []paramClass{}, true
	}
	if m.s == "" {
		return nil, false
	}
	var classes []paramClass
	for m.s != "" {
		if m.peek() == 'v' {
			return nil, false // void among other parameters
		}
		c, ok := m.typ()
		if !ok {
			return nil, false
		}
		classes = append(classes, c)
	}
	return classes, true
}

// peek returns the next byte, 0 at the end.
func (m *mangled) peek() byte {
	if m.s == "" {
		return 0
	}
	return m.s[0]
}

// consume skips prefix and reports whether it was there.
func (m *mangled) consume(prefix string) bool {
	rest, ok := strings.CutPrefix(m.s, prefix)
	m.s = rest
	return ok
}

// enter counts one more level of nesting and reports whether it is within
// maxMangledDepth; leave undoes it.
func (m *mangled) enter() bool {
	m.depth++
	return m.depth <= maxMangledDepth
}

// leave undoes enter.
func (m *mangled) leave() { m.depth-- }

// name parses a <name>: nested, or unscoped with optional template arguments.
// It returns the class of the name as a type and its template arguments, nil
// when it does not end with template arguments.
func (m *mangled) name() (paramClass, []paramClass, bool) {
	if m.peek() == 'N' {
		return m.nestedName()
	}
	return m.unscopedName()
}

// unscopedName parses [St] <unqualified-name> [<template-args>]. A template
// name is a substitution candidate before its arguments. Only the global
// classes __half and __nv_bfloat16 are half.
func (m *mangled) unscopedName() (paramClass, []paramClass, bool) {
	std := m.consume("St")
	id, ok := m.unqualifiedName()
	if !ok {
		return 0, nil, false
	}
	if m.peek() != 'I' {
		if !std && (id == "__half" || id == "__nv_bfloat16") {
			return paramHalf, nil, true
		}
		return paramUnknown, nil, true
	}
	m.subs = append(m.subs, paramUnknown)
	targs, ok := m.templateArgs()
	return paramUnknown, targs, ok
}

// nestedName parses N <prefix> <unqualified-name> E, where the prefix may start
// with a substitution or St and any name may be followed by template arguments.
// Every component but the last is a substitution candidate, unless it is a
// substitution. Qualified member functions (NK..., NR...) are refused.
func (m *mangled) nestedName() (paramClass, []paramClass, bool) {
	m.s = m.s[1:] // N
	var targs []paramClass
	n := 0
	for ; !m.consume("E"); n++ {
		sub := m.peek() == 'S'
		var ok bool
		switch {
		case sub && n == 0:
			ok = m.consume("St")
			if !ok {
				_, ok = m.substitution()
			}
		case m.peek() == 'I' && n > 0 && targs == nil:
			targs, ok = m.templateArgs()
		default:
			_, ok = m.unqualifiedName()
			targs = nil
		}
		if !ok {
			return 0, nil, false
		}
		if !sub && m.peek() != 'E' {
			m.subs = append(m.subs, paramUnknown)
		}
	}
	return paramUnknown, targs, n >= 2
}

// unqualifiedName parses [L] <source-name>, L marking internal linkage, and
// returns the identifier.
func (m *mangled) unqualifiedName() (string, bool) {
	m.consume("L")
	n, ok := m.number()
	if !ok || n == 0 || n > len(m.s) {
		return "", false
	}
	id := m.s[:n]
	m.s = m.s[n:]
	return id, true
}

// number parses a decimal number of at most maxMangledNumber.
func (m *mangled) number() (int, bool) {
	i, n := 0, 0
	for ; i < len(m.s) && '0' <= m.s[i] && m.s[i] <= '9'; i++ {
		n = n*10 + int(m.s[i]-'0')
		if n > maxMangledNumber {
			return 0, false
		}
	}
	m.s = m.s[i:]
	return n, i > 0
}

// substitution parses S_, S<seq-id>_ or a std:: abbreviation (Sa, Sb, Ss,
// Si, So, Sd) and returns the class it stands for.
func (m *mangled) substitution() (paramClass, bool) {
	m.s = m.s[1:] // S
	if m.s != "" && strings.IndexByte("abdios", m.s[0]) >= 0 {
		m.s = m.s[1:]
		return paramUnknown, true
	}
	i, ok := m.seqID()
	if !ok || i >= len(m.subs) {
		return 0, false
	}
	return m.subs[i], true
}

// seqID parses [<seq-id>] _, where a seq-id is a base-36 number written with
// digits and capital letters, and returns the index it stands for: 0 for _,
// seq-id+1 otherwise.
func (m *mangled) seqID() (int, bool) {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	n := 0
	for i := 0; i < len(m.s); i++ {
		if m.s[i] == '_' {
			m.s = m.s[i+1:]
			if i == 0 {
				return 0, true
			}
			return n + 1, true
		}
		d := strings.IndexByte(digits, m.s[i])
		if d < 0 {
			return 0, false
		}
		n = n*36 + d
		if n > maxMangledNumber {
			return 0, false
		}
	}
	return 0, false
}

// typ parses a <type> and returns its class. Every type but builtins and
// plain substitutions becomes a substitution candidate once parsed.
// References, arrays, function types, member pointers, vector types, pack
// expansions, decltype and vendor extensions are refused.
func (m *mangled) typ() (paramClass, bool) {
	if !m.enter() {
		return 0, false
	}
	defer m.leave()
	c := m.peek()
	if cls, ok := mangledBuiltins[c]; ok {
		m.s = m.s[1:]
		return cls, true
	}
	var cls paramClass
	var ok bool
	switch {
	case c == 'D':
		return m.dBuiltin()
	case c == 'P':
		m.s = m.s[1:]
		_, ok = m.typ()
		cls = paramPointer
	case c == 'r' || c == 'V' || c == 'K':
		cls, ok = m.qualifiedType()
	case c == 'T':
		cls, ok = m.templateParam()
	case c == 'S' && !strings.HasPrefix(m.s, "St"):
		cls, ok = m.substitution()
		if !ok || m.peek() != 'I' {
			return cls, ok
		}
		_, ok = m.templateArgs()
		cls = paramUnknown
	case c == 'N' || c == 'S' || '0' <= c && c <= '9':
		cls, _, ok = m.name()
	}
	if !ok {
		return 0, false
	}
	m.subs = append(m.subs, cls)
	return cls, true
}

// dBuiltin parses a builtin type whose code starts with D: those of
// mangledDBuiltins, and DF<N>_ (_FloatN), DF<N>x (_FloatNx) and DF16b
// (std::bfloat16_t).
func (m *mangled) dBuiltin() (paramClass, bool) {
	if len(m.s) >= 2 {
		if cls, ok := mangledDBuiltins[m.s[:2]]; ok {
			m.s = m.s[2:]
			return cls, true
		}
	}
	if !m.consume("DF") {
		return 0, false
	}
	n, ok := m.number()
	switch {
	case !ok:
		return 0, false
	case m.consume("_"):
		if n == 16 {
			return paramHalf, true
		}
		return paramUnknown, true
	case m.consume("x"):
		return paramUnknown, true
	case n == 16 && m.consume("b"):
		return paramHalf, true
	}
	return 0, false
}

// qualifiedType parses [r] [V] [K] <type>, the qualifiers in the order the ABI
// writes them, and returns the class of the type.
func (m *mangled) qualifiedType() (paramClass, bool) {
	m.consume("r")
	m.consume("V")
	m.consume("K")
	if strings.IndexByte("rVK", m.peek()) >= 0 {
		return 0, false
	}
	return m.typ()
}

// templateParam parses T_ or T<n>_, optionally followed by template arguments
// (a template template parameter), and returns the class of the function's
// template argument it refers to, unknown if there is none or it is not a type.
func (m *mangled) templateParam() (paramClass, bool) {
	m.s = m.s[1:] // T
	i := 0
	if !m.consume("_") {
		n, ok := m.number()
		if !ok || !m.consume("_") {
			return 0, false
		}
		i = n + 1
	}
	cls := paramUnknown
	if i < len(m.targs) {
		cls = m.targs[i]
	}
	if m.peek() != 'I' {
		return cls, true
	}
	m.subs = append(m.subs, cls)
	_, ok := m.templateArgs()
	return paramUnknown, ok
}

// templateArgs parses I <template-arg>* E and returns the class of each
// argument, in a non-nil slice. The ABI asks for one argument at least, but
// c++filt reads IE as <>, and so does this.
func (m *mangled) templateArgs() ([]paramClass, bool) {
	m.s = m.s[1:] // I
	args := []paramClass{}
	for !m.consume("E") {
		cls, ok := m.templateArg()
		if !ok {
			return nil, false
		}
		args = append(args, cls)
	}
	return args, true
}

// templateArg parses a type, a literal L <type> <value> E or an argument pack
// J <template-arg>* E. Literals and packs are not types: their class is
// unknown. Expressions (X...E) and external names (L_Z...E) are refused.
func (m *mangled) templateArg() (paramClass, bool) {
	if !m.enter() {
		return 0, false
	}
	defer m.leave()
	switch m.peek() {
	case 'L':
		m.s = m.s[1:]
		return paramUnknown, m.literalValue()
	case 'J':
		m.s = m.s[1:]
		for !m.consume("E") {
			if _, ok := m.templateArg(); !ok {
				return 0, false
			}
		}
		return paramUnknown, true
	}
	return m.typ()
}

// literalValue parses the <type> <value> E of a literal: the value is a
// number, possibly negative (n) or hexadecimal (floating point), or nothing
// (nullptr).
func (m *mangled) literalValue() bool {
	if _, ok := m.typ(); !ok {
		return false
	}
	i := 0
	for i < len(m.s) && ('0' <= m.s[i] && m.s[i] <= '9' || 'a' <= m.s[i] && m.s[i] <= 'z') {
		i++
	}
	m.s = m.s[i:]
	return m.consume("E")
}
