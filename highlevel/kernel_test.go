package highlevel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/gocuda/cuda/cudadrv"
)

// testKernel is a kernel with the given parameter sizes, laid out as C lays
// out a parameter list: each at the next multiple of its size.
func testKernel(sizes ...uint32) *Kernel {
	k := &Kernel{m: &Module{}, name: "k"}
	off := uint32(0)
	for _, s := range sizes {
		off = (off + s - 1) / s * s
		k.params = append(k.params, param{off: off, size: s})
		off += s
		k.size = int(off)
	}
	return k
}

type vec3 struct{ X, Y, Z float32 }

func TestKernelArguments(t *testing.T) {
	var host [16]byte
	mem := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	addr := uint64(uintptr(mem.ptr))
	arr := &Array[float64]{p: MemoryPointer{mem: mem, off: 8}, n: 1}
	freed := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	freed.life.Close()
	for _, tt := range []struct {
		name string
		size uint32
		arg  any
		want []byte // nil: an error containing err
		err  string
	}{
		{"float32", 4, float32(1.5), le32(math.Float32bits(1.5)), ""},
		{"float64", 8, 2.5, le64(math.Float64bits(2.5)), ""},
		{"int32", 4, int32(-2), le32(0xfffffffe), ""},
		{"int to 8 bytes", 8, -1, le64(math.MaxUint64), ""},
		{"uint8", 1, uint8(9), []byte{9}, ""},
		{"bool", 1, true, []byte{1}, ""},
		{"int16", 2, int16(-1), []byte{0xff, 0xff}, ""},
		{"uint64", 8, uint64(1 << 40), le64(1 << 40), ""},
		{"uintptr", 8, uintptr(0x1000), le64(0x1000), ""},
		{"Deviceptr", 8, cudadrv.Deviceptr(0x2000), le64(0x2000), ""},
		{"unsafe.Pointer", 8, mem.ptr, le64(addr), ""},
		{"*Memory", 8, mem, le64(addr), ""},
		{"MemoryPointer", 8, MemoryPointer{mem: mem, off: 4}, le64(addr + 4), ""},
		{"*Array", 8, arr, le64(addr + 8), ""},
		{"struct", 12, vec3{1, 2, 3}, append(append(le32(math.Float32bits(1)), le32(math.Float32bits(2))...), le32(math.Float32bits(3))...), ""},
		{"array", 8, [2]int32{1, 2}, append(le32(1), le32(2)...), ""},

		{"int for 4 bytes", 4, 7, nil, "int is 8 bytes, the parameter 4"},
		{"float64 for float", 4, 1.0, nil, "float64 is 8 bytes, the parameter 4"},
		{"int32 for pointer", 8, int32(1), nil, "int32 is 4 bytes, the parameter 8"},
		{"struct size", 8, vec3{}, nil, "highlevel.vec3 is 12 bytes, the parameter 8"},
		{"string", 8, "x", nil, "string cannot be passed"},
		{"slice", 8, []float32{1}, nil, "[]float32 cannot be passed"},
		{"struct with pointer", 8, struct{ P *int }{}, nil, "cannot be passed"},
		{"Go pointer", 8, new(int), nil, "*int cannot be passed"},
		{"nil", 8, nil, nil, "nil"},
		{"nil *Array", 8, (*Array[float32])(nil), nil, "nil *highlevel.Array[float32]"},
		{"freed *Memory", 8, freed, nil, ErrFreed.Error()},
		{"zero MemoryPointer", 8, MemoryPointer{}, nil, "zero MemoryPointer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := testKernel(tt.size)
			buf := make([]byte, k.size)
			_, err := k.pack(buf, []any{tt.arg}, &Stream{})
			if tt.want == nil {
				if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "k argument 0") {
					t.Errorf("pack(%T) = %v, want ErrArgument naming argument 0 and %q", tt.arg, err, tt.err)
				}
				// The argument's own error stays matchable: a program
				// tells a freed array from a wrong type.
				if is := map[string]error{"freed *Memory": ErrFreed, "nil *Array": ErrNil, "zero MemoryPointer": ErrNil}[tt.name]; is != nil && !errors.Is(err, is) {
					t.Errorf("pack(%T) = %v, want it to match %v too", tt.arg, err, is)
				}
				return
			}
			if err != nil || string(buf) != string(tt.want) {
				t.Errorf("pack(%T) = % x, %v; want % x", tt.arg, buf, err, tt.want)
			}
		})
	}
}

func TestKernelArgumentLayout(t *testing.T) {
	// saxpy(float a, const float *x, float *y, int n): a at 0, x at 8, y at
	// 16, n at 24, as the compiler lays them out.
	k := testKernel(4, 8, 8, 4)
	var offsets []uint32
	for _, p := range k.params {
		offsets = append(offsets, p.off)
	}
	if want := []uint32{0, 8, 16, 24}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	buf := make([]byte, k.size)
	if _, err := k.pack(buf, []any{float32(2), uintptr(0x100), uintptr(0x200), int32(1000)}, &Stream{}); err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	if ne.Uint32(buf[0:]) != math.Float32bits(2) || ne.Uint64(buf[8:]) != 0x100 || ne.Uint64(buf[16:]) != 0x200 || ne.Uint32(buf[24:]) != 1000 {
		t.Errorf("buffer % x", buf)
	}
	for _, args := range [][]any{{float32(2)}, {float32(2), uintptr(1), uintptr(2), 3, 4}} {
		if _, err := k.pack(buf, args, &Stream{}); !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "takes 4 arguments") {
			t.Errorf("%d arguments: %v", len(args), err)
		}
	}
}

// TestKernelArgumentsAllocate checks that packing the arguments of a launch,
// as Launch does, allocates nothing: not the arguments' conversions to any,
// not the buffer.
func TestKernelArgumentsAllocate(t *testing.T) {
	var host [16]byte
	mem := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	x := &Array[float32]{p: MemoryPointer{mem: mem}, n: 4}
	y := MemoryPointer{mem: mem, off: 4}
	k := testKernel(4, 8, 8, 4, 12)
	a, n := float32(2.5), int32(1000)
	v := vec3{1, 2, 3}
	allocs := testing.AllocsPerRun(100, func() {
		var buf [256]byte
		if _, err := k.pack(buf[:], []any{a, x, y, n, v}, &Stream{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("packing allocates %v times per launch", allocs)
	}
	// Arguments that have a shape: the first launch records it, the rest
	// take it.
	k = testKernel(4, 8, 8, 4)
	allocs = testing.AllocsPerRun(100, func() {
		var buf [256]byte
		if _, err := k.pack(buf[:], []any{a, x, x, n}, &Stream{}); err != nil {
			t.Fatal(err)
		}
	})
	if k.shape.Load() == nil || allocs != 0 {
		t.Errorf("packing by shape allocates %v times per launch (shape %v)", allocs, k.shape.Load())
	}
}

// TestKernelShape checks that a launch whose argument types are those of
// the kernel's shape, which packShape writes, gets what putArg would have
// written and pack's errors: the same bytes, device and error as on a
// kernel that has no shape. Each case sets which devices have peer access,
// whatever earlier tests enabled on the GPUs.
func TestKernelShape(t *testing.T) {
	var host [64]byte
	mem := func(d Device, managed bool) *Memory {
		return &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host), dev: d, managed: managed}
	}
	freed := mem(0, false)
	freed.life.Close()
	arr := func(m *Memory, off int) *Array[float32] {
		return &Array[float32]{p: MemoryPointer{mem: m, off: off}, n: 1}
	}
	x, y := arr(mem(0, false), 4), arr(mem(0, false), 8)
	saxpy := []any{float32(2), x, y, int32(7)}
	s0, s1 := &Stream{dev: 0}, &Stream{dev: 1}
	for _, tt := range []struct {
		name        string
		sizes       []uint32
		first, then []any
		s           *Stream     // then's; first's is s0
		fast        bool        // then takes packShape
		peers       [][2]Device // the pairs with peer access, and no others
	}{
		{"same types", []uint32{4, 8, 8, 4}, saxpy, []any{float32(-1.5), y, x, int32(-8)}, s0, true, nil},
		{"the first's own", []uint32{4, 8, 8, 4}, saxpy, saxpy, s0, true, nil},
		{"8-byte numbers", []uint32{8, 8, 8, 4}, []any{1, uint64(2), 2.5, uint32(3)}, []any{-5, uint64(1 << 40), -0.25, uint32(9)}, s0, true, nil},
		{"uintptr and uint", []uint32{8, 8}, []any{uintptr(1), uint(2)}, []any{uintptr(0x1000), uint(1 << 50)}, s0, true, nil},
		{"managed memory of another device", []uint32{4, 8, 8, 4}, saxpy, []any{float32(1), arr(mem(1, true), 0), y, int32(1)}, s0, true, nil},
		{"nil stream", []uint32{4, 8, 8, 4}, saxpy, []any{float32(1), arr(mem(1, false), 0), arr(mem(1, false), 12), int32(1)}, nil, true, nil},
		{"no shape", []uint32{4, 8, 8, 4}, []any{float32(2), x.MemoryPointer(), y, int32(7)}, saxpy, s0, false, nil},
		{"another type", []uint32{4, 8, 8, 4}, saxpy, []any{int32(2), x, y, int32(7)}, s0, false, nil},
		{"another Array type", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), &Array[int32]{p: x.p, n: 1}, y, int32(7)}, s0, false, nil},
		{"named number", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), x, y, paramClass(7)}, s0, false, nil},
		{"too few", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), x, y}, s0, false, nil},
		{"freed Array", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), arr(freed, 0), y, int32(7)}, s0, false, nil},
		{"nil Array", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), (*Array[float32])(nil), y, int32(7)}, s0, false, nil},
		{"Array of another device", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), x, arr(mem(1, false), 0), int32(7)}, s0, false, nil},
		{"Arrays of two devices", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), arr(mem(1, false), 0), x, int32(7)}, nil, false, nil},
		{"another stream's device", []uint32{4, 8, 8, 4}, saxpy, saxpy, s1, false, nil},
		{"Array of a peer device", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), x, arr(mem(1, false), 0), int32(7)}, s0, true, [][2]Device{{0, 1}}},
		{"Array of a device with peer access the other way", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), x, arr(mem(1, false), 0), int32(7)}, s0, false, [][2]Device{{1, 0}}},
		{"Arrays of two peer devices", []uint32{4, 8, 8, 4}, saxpy, []any{float32(2), arr(mem(1, false), 0), x, int32(7)}, nil, true, [][2]Device{{1, 0}}},
		{"another stream's device, a peer", []uint32{4, 8, 8, 4}, saxpy, saxpy, s1, true, [][2]Device{{1, 0}}},
		{"nil stream, no memory", []uint32{4, 8}, []any{int32(1), 2}, []any{int32(3), 4}, nil, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			setPeers(t, tt.peers...)
			k := testKernel(tt.sizes...)
			buf := make([]byte, k.size)
			if _, err := k.pack(buf, tt.first, s0); err != nil {
				t.Fatalf("first launch: %v", err)
			}
			sh := k.shape.Load()
			if (sh != nil) != (tt.name != "no shape") {
				t.Fatalf("shape after the first launch: %v", sh)
			}
			if sh != nil {
				if _, fast := packShape(make([]byte, k.size), tt.then, tt.s, *sh); fast != tt.fast {
					t.Errorf("packShape took them: %v, want %v", fast, tt.fast)
				}
			}
			clear(buf)
			d, err := k.pack(buf, tt.then, tt.s)
			want := make([]byte, k.size)
			wantD, wantErr := testKernel(tt.sizes...).pack(want, tt.then, tt.s)
			if d != wantD || fmt.Sprint(err) != fmt.Sprint(wantErr) || (err == nil && !bytes.Equal(buf, want)) {
				t.Errorf("pack = % x, %v, %v; without a shape % x, %v, %v", buf, d, err, want, wantD, wantErr)
			}
			// Only the first launch that has a shape records it.
			if got := k.shape.Load(); sh != nil && got != sh || sh == nil && (got != nil) != (err == nil) {
				t.Errorf("the shape after the second launch: %v, after the first %v", got, sh)
			}
		})
	}
}

// setPeers makes pairs the only pairs of devices with peer access, as
// canAccess sees them, until t ends: as if EnablePeerAccess had succeeded
// for each, and for no other pair in the process.
func setPeers(t *testing.T, pairs ...[2]Device) {
	t.Helper()
	var saved [][2]Device
	peers.Range(func(k, _ any) bool {
		saved = append(saved, k.([2]Device))
		return true
	})
	set := func(pairs [][2]Device) {
		peers.Clear()
		for _, p := range pairs {
			peers.Store(p, struct{}{})
		}
	}
	set(pairs)
	t.Cleanup(func() { set(saved) })
}

// TestKernelShapeConcurrent launches one kernel from several goroutines at
// once with arguments of different types, as in every order the first
// launch's shape may be recorded in: each must get its own bytes.
func TestKernelShapeConcurrent(t *testing.T) {
	k := testKernel(8, 8)
	le := func(vs ...uint64) []byte {
		b := make([]byte, 8*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], v)
		}
		return b
	}
	// What each set of arguments packs to, worked out apart from pack.
	cases := []struct {
		args []any
		want []byte // nil: refused, with ErrArgument naming the zero MemoryPointer
	}{
		{[]any{1, 2}, le(1, 2)},
		{[]any{uint64(3), 4.5}, le(3, math.Float64bits(4.5))},
		{[]any{uintptr(5), uint(6)}, le(5, 6)},
		{[]any{7.5, MemoryPointer{}}, nil},
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := cases[(g+i)%len(cases)]
				buf := make([]byte, k.size)
				_, err := k.pack(buf, c.args, &Stream{})
				switch {
				case c.want == nil && (!errors.Is(err, ErrArgument) || !strings.Contains(fmt.Sprint(err), "argument 1: highlevel.MemoryPointer: highlevel: nil object")):
					t.Errorf("%v: %v, want ErrArgument for the zero MemoryPointer", c.args, err)
					return
				case c.want != nil && (err != nil || !bytes.Equal(buf, c.want)):
					t.Errorf("%v: % x, %v; want % x", c.args, buf, err, c.want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// launchable returns a kernel of four parameters (4, 8, 8 and 4 bytes)
// whose function is looked up, and a stream of an H200's limits, for
// launches that stop before the shim (launchHook).
func launchable() (*Kernel, *Stream) {
	k := testKernel(4, 8, 8, 4)
	k.funcs = make([]atomic.Uintptr, 1)
	k.funcs[0].Store(1) // the kernel's function, looked up
	limits := deviceLimits{maxThreadsPerBlock: 1024, maxBlock: [3]int32{1024, 1024, 64}, maxGrid: [3]int32{1 << 30, 1 << 16, 1 << 16}}
	return k, &Stream{state: &deviceState{limits: limits}}
}

// TestLaunchKeepsArguments checks that a launch keeps its arguments
// reachable until the shim has queued it: Arrays whose last references are
// the arguments of Launch must not be collected, and their memory freed by
// its cleanup, between the packing of their addresses and the call.
func TestLaunchKeepsArguments(t *testing.T) {
	k, s := launchable()
	var host [8]byte
	var ws []weak.Pointer[Array[float32]]
	array := func() *Array[float32] {
		a := &Array[float32]{p: MemoryPointer{mem: &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}}, n: 2}
		ws = append(ws, weak.Make(a))
		return a
	}
	type stop struct{}
	launchHook = func() {
		runtime.GC()
		for i, w := range ws {
			if w.Value() == nil {
				t.Errorf("argument %d was collected before the launch's call", i+1)
			}
		}
		panic(stop{}) // rather than call the shim, which has no driver here
	}
	defer func() { launchHook = nil }()
	for range 2 { // packed by putArg, then by shape
		func() {
			defer func() {
				if r := recover(); r != (stop{}) {
					t.Fatalf("Launch: %v", r)
				}
			}()
			k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2}}, float32(2), array(), array(), int32(2))
		}()
		ws = ws[:0]
	}
}

// freeRecorder is an owner that records whether its memory was freed.
type freeRecorder struct{ freed atomic.Bool }

func (f *freeRecorder) free(*Memory) error {
	f.freed.Store(true)
	return nil
}

// TestFreeWaitsForLaunch checks that a launch holds the memory it names
// until it is queued, by either packer and for every kind of memory
// argument: a Free in another goroutine returns only once the launch's
// call is over, so the memory cannot be handed out again (to an
// allocation that a Malloc at once would take) under a kernel about to
// be queued on it. A launch that fails after packing lets go too.
func TestFreeWaitsForLaunch(t *testing.T) {
	k, s := launchable()
	var host [8]byte
	type stop struct{}
	for _, tt := range []struct {
		name string
		arg  func(m *Memory) any
	}{
		{"Array, first launch", func(m *Memory) any { return &Array[float32]{p: MemoryPointer{mem: m}, n: 2} }},
		{"Array, shape", func(m *Memory) any { return &Array[float32]{p: MemoryPointer{mem: m}, n: 2} }},
		{"MemoryPointer", func(m *Memory) any { return MemoryPointer{mem: m} }},
		{"*Memory", func(m *Memory) any { return m }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &freeRecorder{}
			m := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host), owner: rec}
			inLaunch, proceed := make(chan struct{}), make(chan struct{})
			launchHook = func() {
				close(inLaunch)
				<-proceed
				panic(stop{}) // rather than call the shim, which has no driver here
			}
			defer func() { launchHook = nil }()
			launched := make(chan struct{})
			go func() {
				defer close(launched)
				defer func() {
					if r := recover(); r != (stop{}) {
						t.Errorf("Launch: %v", r)
					}
				}()
				k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 2}}, float32(2), tt.arg(m), tt.arg(m), int32(2))
			}()
			<-inLaunch
			freed := make(chan error)
			go func() { freed <- m.free() }()
			select {
			case err := <-freed:
				t.Fatalf("Free returned (%v, freed %v) while a launch on the memory was under way", err, rec.freed.Load())
			case <-time.After(20 * time.Millisecond):
			}
			close(proceed)
			<-launched
			if err := <-freed; err != nil || !rec.freed.Load() {
				t.Errorf("Free after the launch: %v, freed %v", err, rec.freed.Load())
			}
		})
	}
	// A launch refused after packing (a block the device cannot run)
	// lets go of its memory too.
	m := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host), owner: &freeRecorder{}}
	a := &Array[float32]{p: MemoryPointer{mem: m}, n: 2}
	if err := k.Launch(s, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 4096}}, float32(2), a, a, int32(2)); err == nil {
		t.Fatal("Launch with a block of 4096 threads: no error")
	}
	if err := m.free(); err != nil {
		t.Errorf("Free after a refused launch: %v", err)
	}
}

// TestKernelArgumentTypes checks the arguments of a C++ kernel against the
// parameter types its mangled name gives, beyond their sizes.
func TestKernelArgumentTypes(t *testing.T) {
	var host [16]byte
	mem := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	// scale(float a, float *y, int n, unsigned long m, bool b, __half h)
	k := testKernel(4, 8, 4, 8, 1, 2)
	k.name = "_Z5scalefPiim7__halfb"
	for i, c := range []paramClass{paramFloat, paramPointer, paramSigned, paramUnsigned, paramBool, paramHalf} {
		k.params[i].class = c
	}
	for _, tt := range []struct {
		name string
		args []any
		err  string // "" for none
	}{
		{"right", []any{float32(2), mem, int32(3), uint64(4), true, uint16(0x3c00)}, ""},
		{"signedness may differ", []any{float32(2), mem, uint32(3), int64(4), true, uint16(0)}, ""},
		{"int32 for float", []any{int32(2), mem, int32(3), uint64(4), true, uint16(0)}, "int32 cannot be passed for a float parameter"},
		{"untyped constant for float", []any{2, mem, int32(3), uint64(4), true, uint16(0)}, "int is 8 bytes, the parameter 4"},
		{"float32 for int", []any{float32(2), mem, float32(3), uint64(4), true, uint16(0)}, "float32 cannot be passed for a signed integer parameter"},
		{"float64 for pointer", []any{float32(2), 1.5, int32(3), uint64(4), true, uint16(0)}, "float64 cannot be passed for a pointer parameter"},
		{"pointer for integer", []any{float32(2), mem, int32(3), mem, true, uint16(0)}, "*highlevel.Memory cannot be passed for a unsigned integer parameter"},
		{"uint8 for bool", []any{float32(2), mem, int32(3), uint64(4), uint8(1), uint16(0)}, "uint8 cannot be passed for a bool parameter"},
		{"int16 for half", []any{float32(2), mem, int32(3), uint64(4), true, int16(0)}, "int16 cannot be passed for a half parameter"},
	} {
		var buf [64]byte
		_, err := k.pack(buf[:], tt.args, &Stream{})
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (!errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want ErrArgument with %q", tt.name, err, tt.err)
		}
	}
}

func TestLaunchConfigDims(t *testing.T) {
	for _, tt := range []struct {
		d    Dim3
		want string
	}{
		{Dim3{}, "(1, 1, 1)"},
		{Dim3{X: 256}, "(256, 1, 1)"},
		{Dim3{X: 2, Y: 3, Z: 4}, "(2, 3, 4)"},
	} {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%#v.String() = %s, want %s", tt.d, got, tt.want)
		}
	}
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func TestDim3String(t *testing.T) {
	for _, tc := range []struct {
		d    Dim3
		want string
	}{
		{Dim3{}, "(1, 1, 1)"},
		{Dim3{X: 256}, "(256, 1, 1)"},
		{Dim3{X: 2, Y: 3, Z: 4}, "(2, 3, 4)"},
		{Dim3{X: -1}, "(-1, 1, 1)"},
		{Dim3{Y: -5, Z: 7}, "(1, -5, 7)"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestKernelShapeReleases launches with an Array where the kernel's shape
// has one, then a type the shape does not have: packShape gives the launch
// to pack, and must first release the Arrays it acquired before that
// argument, or their Free waits forever (TestStandInRandom found it).
func TestKernelShapeReleases(t *testing.T) {
	var host [64]byte
	m := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	x := &Array[float32]{p: MemoryPointer{mem: m}, n: 1}
	k := testKernel(4, 8, 8, 4)
	buf := make([]byte, k.size)
	for _, args := range [][]any{
		{float32(2), x, x, int32(7)},                 // records the shape
		{float32(2), x, x.MemoryPointer(), int32(7)}, // differs after x
	} {
		if _, err := k.pack(buf, args, &Stream{}); err != nil {
			t.Fatal(err)
		}
		k.releaseArgs(args)
	}
	closed := make(chan struct{})
	go func() { m.life.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the memory's Close still waits after 10 s: an operation on it never ended")
	}
}
