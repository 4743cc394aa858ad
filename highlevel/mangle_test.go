package highlevel

import (
	"slices"
	"strings"
	"testing"
)

// A paramClassTest is a mangled name and the classes paramClasses must
// return for it, nil where it must fail.
type paramClassTest struct {
	name string
	want []paramClass
}

// paramClassTests returns mangled names, most of them emitted by g++ (same
// Itanium ABI as NVRTC), commented with the declaration c++filt gives.
func paramClassTests() []paramClassTest {
	const (
		cU   = paramUnknown
		cS   = paramSigned
		cUns = paramUnsigned
		cB   = paramBool
		cF   = paramFloat
		cD   = paramDouble
		cH   = paramHalf
		cP   = paramPointer
	)
	return []paramClassTest{
		// Not mangled, or not complete.
		{"saxpy", nil},
		{"", nil},
		{"_Z", nil},
		{"_Z5empty", nil},      // no parameter list
		{"_Z5scalefPfiX", nil}, // trailing garbage
		{"_Z1k7__half", nil},   // __half has 6 bytes, not 7

		// Plain functions.
		{"_Z5emptyv", []paramClass{}},                    // empty()
		{"_Z5scalefPfi", []paramClass{cF, cP, cS}},       // scale(float, float*, int)
		{"_Z5args4fPfS_i", []paramClass{cF, cP, cP, cS}}, // args4(float, float*, float*, int)
		{"_Z6args4fPfS_i", []paramClass{cP, cP, cS}},     // args4f(float*, float*, int)
		{"_Z1kb", []paramClass{cB}},                      // k(bool)
		{"_Z1kcahstijlmxy", []paramClass{cS, cS, cUns, cS, cUns, cS, cUns, cS, cUns, cS, cUns}},
		{"_Z2ldenowDsDiDn", []paramClass{cU, cU, cU, cU, cU, cU, cU}}, // ld(long double, __int128, unsigned __int128, wchar_t, char16_t, char32_t, nullptr_t)
		{"_ZL2sti", []paramClass{cS}},                                 // static st(int)
		{"_ZN12_GLOBAL__N_14anonEPf", []paramClass{cP}},               // (anonymous namespace)::anon(float*)

		// Half types and classes.
		{"_Z1k6__half", []paramClass{cH}},               // k(__half)
		{"_Z1k13__nv_bfloat16", []paramClass{cH}},       // k(__nv_bfloat16)
		{"_Z1k6float4", []paramClass{cU}},               // k(float4)
		{"_Z2hh6__halfPS_S_", []paramClass{cH, cP, cH}}, // hh(__half, __half*, __half)
		{"_Z3f16DF16_PDF16_", []paramClass{cH, cP}},     // f16(_Float16, _Float16*)
		{"_Z1fDF16bPDF16b", []paramClass{cH, cP}},       // f(std::bfloat16_t, std::bfloat16_t*)
		{"_Z1fDhPDh", []paramClass{cH, cP}},             // f(half, half*)
		{"_Z1fDF32_DF64xDF32b", nil},                    // DF<N>b is only bfloat16
		{"_Z1fDF32_DF64x", []paramClass{cU, cU}},        // f(_Float32, _Float64x)
		{"_Z1kN2ns6__halfE", []paramClass{cU}},          // k(ns::__half)
		{"_Z1kSt6__half", []paramClass{cU}},             // k(std::__half)

		// Pointers, qualifiers and substitutions.
		{"_ZN2ns6kernelEPKdS1_m", []paramClass{cP, cP, cUns}}, // ns::kernel(const double*, const double*, unsigned long)
		{"_Z3sumPK6float2PS_j", []paramClass{cP, cP, cUns}},   // sum(const float2*, float2*, unsigned)
		{"_Z2cvPVKiS0_", []paramClass{cP, cP}},                // cv(const volatile int*, const volatile int*)
		{"_Z2rsPfPKfPrS_", []paramClass{cP, cP, cP}},          // rs(float*, const float*, float* restrict*)
		{"_Z2vpPvPKv", []paramClass{cP, cP}},                  // vp(void*, const void*)
		{"_Z6ptrptrPPfS0_", []paramClass{cP, cP}},             // ptrptr(float**, float**)
		{"_Z1kfS_", nil},                                          // builtins are not candidates
		{"_Z5scalefPfS0_", nil},                                   // S0_ out of range
		{"_Z1kKrPf", nil},                                         // qualifiers out of order
		{"_ZN2ns1fENS_1AE", []paramClass{cU}},                     // ns::f(ns::A)
		{"_ZN2ns1gENS_1AEPS0_", []paramClass{cU, cP}},             // ns::g(ns::A, ns::A*)
		{"_Z2cxPN4cuda3std7complexIfEES2_", []paramClass{cP, cU}}, // cx(cuda::std::complex<float>*, cuda::std::complex<float>)
		{"_Z2vvSt6vectorIiSaIiEEPS1_", []paramClass{cU, cP}},      // vv(std::vector<int>, std::vector<int>*)
		{"_Z1fSaIcEPS_", []paramClass{cU, cP}},                    // f(std::allocator<char>, std::allocator<char>*)
		{"_Z2vsNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEPS4_", []paramClass{cU, cP}}, // vs(std::string, std::string*)

		// Templates: the return type comes first.
		{"_Z4fillIfEvPT_i", []paramClass{cP, cS}},                       // fill<float>(float*, int)
		{"_Z4fillIdEvPT_T_", []paramClass{cP, cD}},                      // fill<double>(double*, double)
		{"_Z4fillIdEvPT_S0_", []paramClass{cP, cD}},                     // the same, as g++ writes it
		{"_Z4tileILi16EfEvPT0_", []paramClass{cP}},                      // tile<16, float>(float*)
		{"_Z2f2IiEvPT_S1_", []paramClass{cP, cP}},                       // f2<int>(int*, int*)
		{"_Z3tenIiEvv", []paramClass{}},                                 // ten<int>()
		{"_Z3negILin3EEvPi", []paramClass{cP}},                          // neg<-3>(int*)
		{"_Z2flILf3fc00000EEvPf", []paramClass{cP}},                     // fl<1.5f>(float*)
		{"_Z2enIL1E1EEvPi", []paramClass{cP}},                           // en<(E)1>(int*)
		{"_Z1fIJLi1ELi2EEEvPi", []paramClass{cP}},                       // f<1, 2>(int*)
		{"_Z2lbILb1E6float2EvT0_", []paramClass{cU}},                    // lb<true, float2>(float2)
		{"_Z3twoI6float2dEvT0_PT_PS1_", []paramClass{cD, cP, cP}},       // two<float2, double>(double, float2*, double*)
		{"_Z2tuIfN2ns1AEEvPT_PT0_S2_S4_", []paramClass{cP, cP, cF, cU}}, // tu<float, ns::A>(float*, ns::A*, float, ns::A)
		{"_Z6reduceIfLi256EEvPKT_PS0_m", []paramClass{cP, cP, cUns}},    // reduce<float, 256>(const float*, float*, size_t)
		{"_Z3cvtIN2ns1AEEvPKT_PVS2_S2_", []paramClass{cP, cP, cU}},      // cvt<ns::A>(const ns::A*, volatile ns::A*, ns::A)
		{"_Z2ttI1WEvPT_IiE", []paramClass{cP}},                          // tt<W>(W<int>*)
		{"_ZN2ns5tfillIfEEvPT_i", []paramClass{cP, cS}},                 // ns::tfill<float>(float*, int)
		{"_ZN2ns1AIiE1gIfEEviT_", []paramClass{cS, cF}},                 // ns::A<int>::g<float>(int, float)
		{"_Z1fIiEvT0_", []paramClass{cU}},                               // T0_ beyond the arguments
		{"_Z1fILi1EEvT_", []paramClass{cU}},                             // T_ is a literal
		{"_Z1fIEvv", []paramClass{}},                                    // f<>(), as c++filt reads it

		// Refused.
		{"_Z1kfv", nil},                // k(float, void)
		{"_Z1kvf", nil},                // k(void, float)
		{"_Z3refRi", nil},              // ref(int&)
		{"_ZSt3maxIiERKT_S2_S2_", nil}, // std::max<int>(const int&, const int&)
		{"_Z3fnpPFviE", nil},           // fnp(void (*)(int))
		{"_Z2pkIJifEEvDpT_", nil},      // pk<int, float>(int, float)
		{"_Z1fPDv4_f", nil},            // f(float __vector(4)*)
		{"_Z1fPA4_i", nil},             // f(int (*)[4])
		{"_Z1fM1AFviE", nil},           // f(void (A::*)(int))
		{"_ZNK2ns1B1mEv", nil},         // ns::B::m() const
		{"_ZN2ns1BC1Ev", nil},          // ns::B::B()
		{"_Z1fIXadL_Z1gvEEEvv", nil},   // expression argument
		{"_Z1fILZ1gvEEEvv", nil},       // local name as literal type
	}
}

func TestParamClasses(t *testing.T) {
	for _, tt := range paramClassTests() {
		got, ok := paramClasses(tt.name)
		switch {
		case ok != (tt.want != nil):
			t.Errorf("paramClasses(%q) = %v, %v; want ok %v", tt.name, got, ok, tt.want != nil)
		case ok && (got == nil || !slices.Equal(got, tt.want)):
			t.Errorf("paramClasses(%q) = %#v; want %#v", tt.name, got, tt.want)
		case !ok && got != nil:
			t.Errorf("paramClasses(%q) = %v, false; want nil classes", tt.name, got)
		}
	}
}

func TestParamClassesDepth(t *testing.T) {
	deep := "_Z1k" + strings.Repeat("P", 100) + "f"
	if got, ok := paramClasses(deep); !ok || !slices.Equal(got, []paramClass{paramPointer}) {
		t.Errorf("100 pointers: got %v, %v", got, ok)
	}
	for _, name := range []string{
		"_Z1k" + strings.Repeat("P", 1e6) + "f",
		"_Z1fI" + strings.Repeat("J", 1e6) + "E",
		"_Z1fI" + strings.Repeat("N1aI", 1e5) + "E",
	} {
		if got, ok := paramClasses(name); ok {
			t.Errorf("%d bytes deep: got %v, true", len(name), got)
		}
	}
}

func TestParamClassString(t *testing.T) {
	for c, want := range map[paramClass]string{
		paramUnknown:  "unknown",
		paramSigned:   "signed integer",
		paramUnsigned: "unsigned integer",
		paramBool:     "bool",
		paramFloat:    "float",
		paramDouble:   "double",
		paramHalf:     "half",
		paramPointer:  "pointer",
		42:            "paramClass(42)",
	} {
		if got := c.String(); got != want {
			t.Errorf("paramClass(%d).String() = %q; want %q", c, got, want)
		}
	}
}

func FuzzParamClasses(f *testing.F) {
	for _, tt := range paramClassTests() {
		f.Add(tt.name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		classes, ok := paramClasses(name)
		if !ok {
			return
		}
		if classes == nil {
			t.Fatalf("paramClasses(%q) = nil, true", name)
		}
		for _, c := range classes {
			if c > paramPointer {
				t.Fatalf("paramClasses(%q) = %v: invalid class %d", name, classes, c)
			}
		}
	})
}
