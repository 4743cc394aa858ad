package main

// The model is plain data: what parse found in the headers, already named
// for Go, and what emit turns into source. Printing it (-model) shows
// exactly what the generator knows.

// Package is everything generated for one Go package.
type Package struct {
	Name       string     // Go package name
	Headers    []string   // headers the package is generated from
	Library    string     // the shared library's file name, such as libcuda.so.1
	LibraryEnv string     // the environment variable that may name its path
	Error      *Type      // the status enum, whose values are errors, or nil
	Funcs      []*Func    // in header order
	Makers     []*Maker   `json:",omitempty"` // inline struct constructors, in header order
	Enums      []*Enum    // sorted by Go name
	Records    []*Record  // structs and unions, sorted by Go name
	Typedefs   []*Typedef // handles, function pointers, scalars and aliases, sorted by Go name
	Consts     []*Const   // object-like macros with a constant value, sorted by Go name
	Skipped    []Skip     // what was not emitted, and why
	Renamed    []Skip     // what was named against the rule to avoid a clash, and why
	// PerThread is the macro that selects the per-thread default stream
	// entry points, and Wrappers the per-thread names that the headers then
	// define inline instead of exporting (cuGetProcAddress_v2_ptsz); their
	// functions keep the default symbol.
	PerThread string   `json:",omitempty"`
	Wrappers  []string `json:",omitempty"`
	// Targets are the targets, by GOARCH, whose C ABIs were shown to give
	// this model: the first alone unless gen ran with -check-targets.
	Targets []string
	// Unfacted are the functions that gen's facts name and the headers
	// lack (an older CUDA major's): their facts still hold.
	Unfacted []string `json:",omitempty"`
	// Guide is where the library's documentation is, for the functions its
	// headers do not document, or nil.
	Guide *Guide `json:",omitempty"`
	// Attrs are the functions, by C name, that get or set an attribute's
	// value through void *, each of which has a typed companion (see
	// attrs.go), and AttrPlurals those that get several attributes at once
	// through an array of void *, each with the function that gets one,
	// whose companion their doc names as the typed way.
	Attrs       map[string]AttrFunc `json:",omitempty"`
	AttrPlurals map[string]string   `json:",omitempty"`
	// Uses are the generated packages whose types this one references
	// (see Type.Pkg), by import path.
	Uses map[string]*Package `json:"-"`
}

// AttrFunc is a function that takes an attribute's value through void *.
type AttrFunc struct {
	Attr  string // the parameter of the attribute, whose enum types the value
	Value string // the void * parameter of the value
	// Size is the parameter of the value's size in bytes, or ""; by
	// pointer where the C type is one.
	Size string `json:",omitempty"`
	Set  bool   `json:",omitempty"` // the call reads the value; else it writes it
}

// Guide is where a library's documentation is, for the functions its
// headers do not document (cuBLAS, cuSOLVER, cuSPARSE and cuFFT document
// none in their headers).
type Guide struct {
	Title string // "the cuBLAS Library guide"
	URL   string // the guide, or its API chapter
	// Sections: the guide has a section per function, titled as the
	// function with <t> for the type letter of a family (cublas<t>gemm()),
	// and Sphinx derives its anchor from the title (#cublas-t-gemm).
	Sections bool `json:",omitempty"`
	// Families are the prefixes after which a type letter (S, D, C, Z, H,
	// or their lower case after cublasI) picks a function of a family
	// (cublasSgemm, cublasDgemm, ...).
	Families []string `json:",omitempty"`
}

// Func is a C function.
type Func struct {
	CName  string // as a C caller writes it
	Symbol string // the symbol looked up in the library
	// Inline reports that CName is a static inline function of the headers
	// whose body calls Symbol (nvJitLinkCreate calls __nvJitLinkCreate_13_0).
	Inline bool `json:",omitempty"`
	// PerThread is the symbol called instead when the library is loaded for
	// the per-thread default stream, or "" when there is no such variant.
	PerThread string `json:",omitempty"`
	GoName    string
	Doc       string
	Params    []Param
	Result    *Type // nil for void

	// NoEscape marks the trampoline #cgo noescape and nocallback: gen's
	// facts prove that the call keeps no pointer argument after it returns
	// and runs no function of the program (see annotate).
	NoEscape bool `json:",omitempty"`
}

// Param is a function parameter.
type Param struct {
	CName  string
	GoName string
	Type   *Type
	// Out marks a const char ** whose pointee is not const: the call sets
	// *p to a string of the library's, which the Go function returns
	// instead of taking p (cuGetErrorString's pStr).
	Out bool `json:",omitempty"`
}

// TypeKind classifies a Type.
type TypeKind int

const (
	Scalar  TypeKind = iota // a C arithmetic type: Go holds the Go type, C the C spelling
	Named                   // a type declared in the headers: Go holds its Go name, Class what it is
	Pointer                 // pointer to Elem (nil Elem: void *)
	Array                   // Len elements of Elem
	String                  // const char * as a function parameter
	FuncPtr                 // a function pointer without a typedef
)

// Class is what a named type is.
type Class string

const (
	ClassEnum    Class = "enum"
	ClassStruct  Class = "struct"
	ClassUnion   Class = "union"
	ClassHandle  Class = "handle"  // pointer to an opaque struct
	ClassFuncPtr Class = "funcptr" // pointer to function
	ClassScalar  Class = "scalar"  // arithmetic typedef
)

// Type is a C type as Go sees it.
type Type struct {
	Kind  TypeKind
	Go    string // Scalar: Go type; Named: Go type name
	C     string // Scalar: C spelling; Named: the C spelling of the type
	Class Class  // Named only
	Under *Type  // Named enum or scalar: the underlying scalar
	Elem  *Type  // Pointer, Array
	Len   int64  // Array
	Const bool   // Pointer: to const
	Pkg   string `json:",omitempty"` // Named: import path of the package that declares it, "" for this one
	// LenExpr is, for an Array of a hand-written package's shim, its
	// length in Go as shim.h writes it (ArgsSize / 8), or "".
	LenExpr string `json:",omitempty"`
}

// Enum is a C enum.
type Enum struct {
	CName  string // tag or typedef
	GoName string
	Doc    string
	Under  *Type // scalar
	Values []EnumValue
}

// EnumValue is an enumerator.
type EnumValue struct {
	CName  string
	GoName string
	Doc    string
	Value  int64
}

// Record is a struct or union with its C layout.
type Record struct {
	CName  string // "struct tag", a typedef name, or "" for a nested anonymous type
	CExpr  string // a C type expression for sizeof, _Alignof and offsetof
	GoName string
	Doc    string
	Union  bool
	Size   int64
	Align  int64
	Fields []Field
}

// Field is a member of a Record. The members of an anonymous union are the
// record's own, as in C (see flatten): in a struct, the union's first member
// is a field, unless it is an Accessor, and carries the union's size as Span;
// the others are Accessors.
type Field struct {
	CName    string // "" for an anonymous member
	GoName   string
	Doc      string
	Type     *Type
	Offset   int64
	Size     int64
	Embedded bool // an anonymous struct member
	// Accessor marks a member of an anonymous union of a struct that is not
	// a Go field: a method returns a pointer to it, at Offset.
	Accessor bool `json:",omitempty"`
	// Span is, for the first member of an anonymous union of a struct, the
	// size of the union, whose bytes past the field are kept unexported.
	Span int64 `json:",omitempty"`
}

// Typedef is a typedef that is not an enum, struct or union.
type Typedef struct {
	CName  string
	GoName string
	Doc    string
	Class  Class // handle, funcptr, scalar, or "" for an alias of another named type
	Type   *Type // scalar: the underlying scalar; alias: the aliased type
}

// Const is an object-like macro with a constant value.
type Const struct {
	CName  string
	GoName string
	Doc    string
	Value  string // Go literal
	Int    bool   // an integer: checked against C by the layout test
}

// Skip is a declaration that was not emitted.
type Skip struct {
	Kind   string // function, type, macro
	CName  string
	Reason string
}

// Maker is a static inline function of the headers that returns a struct
// of its parameters (make_cudaExtent): Go builds the same struct, without
// a call into C.
type Maker struct {
	CName  string
	GoName string
	Doc    string
	Params []Param
	Result *Type       // the struct
	Sets   [][2]string // the struct's Go field and the parameter's Go name, in the body's order
}
