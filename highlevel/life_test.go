package highlevel

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

// TestLifeCloseWaits checks the closing protocol: Close waits for the
// operations in progress, refuses new ones, and only one Close closes.
func TestLifeCloseWaits(t *testing.T) {
	var l life
	if !l.Acquire() {
		t.Fatal("acquire on an open object failed")
	}
	var closed atomic.Bool
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if l.Close() {
				wins.Add(1)
				closed.Store(true)
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if closed.Load() {
		t.Fatal("close returned while an operation was in progress")
	}
	if l.Acquire() {
		t.Fatal("acquire succeeded while closing")
	}
	l.Release()
	wg.Wait()
	if !closed.Load() || wins.Load() != 1 {
		t.Fatalf("after the operation ended: closed %v, %d closes won, want 1", closed.Load(), wins.Load())
	}
	if l.Acquire() || l.Close() {
		t.Fatal("a closed object was used or closed again")
	}
}

// TestLifeRace hammers one life with operations and a close: no operation
// runs after close returned (run it under -race).
func TestLifeRace(t *testing.T) {
	for range 50 {
		var l life
		var after atomic.Bool // close has returned
		var bad atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 {
					if !l.Acquire() {
						return
					}
					if after.Load() {
						bad.Add(1)
					}
					l.Release()
				}
			})
		}
		wg.Go(func() {
			l.Close()
			after.Store(true)
		})
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d operations ran after close returned", bad.Load())
		}
	}
}

// nilReceivers are a nil value of every exported pointer type of the
// package that has methods.
var nilReceivers = []any{
	(*Stream)(nil), (*Event)(nil), (*Graph)(nil), (*GraphExec)(nil),
	(*Module)(nil), (*Kernel)(nil), (*Memory)(nil), (*MemoryPool)(nil),
	(*MemoryAsyncPool)(nil), (*PinnedMemory)(nil), (*PinnedMemoryPool)(nil),
	(*HostRegistration)(nil), (*Array[float32])(nil), (*Memo[int, int])(nil),
	(*Borrow)(nil),
}

// nilWorks are the methods that work on a nil receiver: a nil Stream is
// the legacy default stream.
var nilWorks = map[string]bool{"*highlevel.Stream.Borrow": true}

// TestNilReceivers calls every exported method of every type on a nil
// receiver, with zero arguments: none may panic, and each that returns an
// error returns one.
func TestNilReceivers(t *testing.T) {
	for _, v := range nilReceivers {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			name := rv.Type().String() + "." + rv.Type().Method(i).Name
			t.Run(name, func(t *testing.T) {
				out := callZero(t, name+" on nil", rv.Method(i))
				if n := len(out); n > 0 && out[n-1].Type() == errType && out[n-1].IsNil() && !nilWorks[name] {
					t.Errorf("%s on nil returned a nil error", name)
				}
			})
		}
	}
}

var errType = reflect.TypeFor[error]()

// callZero calls method m with zero arguments and returns its results; a
// panic fails the test.
func callZero(t *testing.T, name string, m reflect.Value) (out []reflect.Value) {
	t.Helper()
	ft := m.Type()
	args := make([]reflect.Value, ft.NumIn())
	for j := range args {
		args[j] = reflect.Zero(ft.In(j))
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s panicked: %v", name, p)
		}
	}()
	if ft.IsVariadic() {
		return m.CallSlice(args)
	}
	return m.Call(args)
}

// zeroValues are the exported types of the package that have methods, with
// what their zero values do. The zero value of a type that is made by a
// function of the package is not usable: each of its methods that returns
// an error returns one wrapping ErrNil, and the others return zero values (a
// closed channel from Done). works names the methods that work on the zero
// value ("*": all of them), whose errors are about their arguments; skip
// says why the methods are not called.
var zeroValues = []struct {
	typ   reflect.Type
	works string // methods that work, separated by spaces; "*" for all
	skip  string
}{
	{typ: reflect.TypeFor[Stream]()},
	{typ: reflect.TypeFor[Event]()},
	{typ: reflect.TypeFor[Graph]()},
	{typ: reflect.TypeFor[GraphExec]()},
	{typ: reflect.TypeFor[Module]()},
	{typ: reflect.TypeFor[Kernel]()},
	{typ: reflect.TypeFor[Memory]()},
	{typ: reflect.TypeFor[MemoryPointer]()},
	{typ: reflect.TypeFor[MemoryPool]()},
	{typ: reflect.TypeFor[MemoryAsyncPool]()},
	{typ: reflect.TypeFor[PinnedMemory]()},
	{typ: reflect.TypeFor[PinnedMemoryPool]()},
	{typ: reflect.TypeFor[HostRegistration]()},
	{typ: reflect.TypeFor[Memo[int, int]]()},
	// Align, AlignWords, AlignElems and Coalesce return 0;
	// ValidTextureChannelCount does not depend on the device.
	{typ: reflect.TypeFor[DeviceData](), works: "ValidTextureChannelCount"},
	// An empty view, as Slice(i, i) returns: its copies of empty slices
	// work, and Free returns an error, as a view's does.
	{typ: reflect.TypeFor[Array[float32]](), works: "*"},
	{typ: reflect.TypeFor[IPCEventHandle](), works: "*"}, // names no event
	{typ: reflect.TypeFor[IPCMemHandle](), works: "*"},   // names no memory
	{typ: reflect.TypeFor[Dim3](), works: "*"},
	{typ: reflect.TypeFor[Borrow](), works: "*"},      // lends nothing
	{typ: reflect.TypeFor[CaptureMode](), works: "*"}, // CaptureRelaxed
	{typ: reflect.TypeFor[Advice](), works: "*"},
	{typ: reflect.TypeFor[DeviceAttribute](), works: "*"}, // names no attribute
	{typ: reflect.TypeFor[KernelAttribute](), works: "*"}, // names no attribute
	{typ: reflect.TypeFor[CompileError](), works: "*"},
	{typ: reflect.TypeFor[DriverVersionError](), works: "*"},
	{typ: reflect.TypeFor[OutOfMemoryError](), works: "*"},
	{typ: reflect.TypeFor[PanicError](), works: "*"},
	{typ: reflect.TypeFor[Device](), skip: "device 0, whose methods call the driver"},
}

// TestZeroValues calls every exported method of every type of zeroValues
// on the type's zero value, with zero arguments, and checks what the table
// says: no method panics, and those of a type whose zero value is not
// usable return errors wrapping ErrNil and zero values. Close, Free and
// Unregister return an error twice, and the methods called after them
// still do the same. No CUDA is loaded here: a method that called the
// driver would return its loading error.
func TestZeroValues(t *testing.T) {
	listed := map[string]bool{}
	for _, z := range zeroValues {
		name, _, _ := strings.Cut(z.typ.Name(), "[")
		listed[name] = true
		if z.skip != "" {
			continue
		}
		pt := reflect.PointerTo(z.typ)
		check := func(t *testing.T, m string, out []reflect.Value) {
			t.Helper()
			if z.works == "*" || slices.Contains(strings.Fields(z.works), m) {
				return
			}
			for _, o := range out {
				switch {
				case o.Type() == errType:
					err, _ := o.Interface().(error)
					if !errors.Is(err, ErrNil) || !strings.Contains(err.Error(), "zero "+name+" (make one with ") ||
						strings.Count(err.Error(), "highlevel:") != 1 {
						t.Errorf("%s.%s of the zero value returned %v, want an error wrapping ErrNil that says how to make one", z.typ, m, err)
					}
				case o.Kind() == reflect.Chan:
					if v, ok := o.TryRecv(); !v.IsValid() || ok {
						t.Errorf("%s.%s of the zero value returned a channel that is not closed", z.typ, m)
					}
				case !o.IsZero():
					t.Errorf("%s.%s of the zero value returned %v, want %v", z.typ, m, o, reflect.Zero(o.Type()))
				}
			}
		}
		for i := range pt.NumMethod() {
			m := pt.Method(i).Name
			t.Run(z.typ.Name()+"."+m, func(t *testing.T) {
				check(t, m, callZero(t, m, reflect.New(z.typ).Method(i)))
			})
		}
		for _, release := range []string{"Close", "Free", "Unregister"} {
			if _, ok := pt.MethodByName(release); !ok {
				continue
			}
			t.Run(z.typ.Name()+" after "+release, func(t *testing.T) {
				v := reflect.New(z.typ)
				for range 2 {
					out := callZero(t, release, v.MethodByName(release))
					if out[0].IsNil() {
						t.Fatalf("%s.%s of the zero value returned nil", z.typ, release)
					}
					check(t, release, out)
				}
				for i := range pt.NumMethod() {
					m := pt.Method(i).Name
					check(t, m, callZero(t, m+" after "+release, v.Method(i)))
				}
			})
		}
	}
	for _, name := range typesWithMethods(t) {
		if !listed[name] {
			t.Errorf("type %s has methods and is not in zeroValues", name)
		}
	}
}

// typesWithMethods returns the exported types of the package that have
// exported methods, from its source files; none where the sources are not
// here (a GPU suite's copy of the test).
func typesWithMethods(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Log("the sources are not here: which types have methods is not checked")
		return nil
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			switch x := typ.(type) {
			case *ast.IndexExpr:
				typ = x.X
			case *ast.IndexListExpr:
				typ = x.X
			}
			if id, ok := typ.(*ast.Ident); ok && id.IsExported() && !slices.Contains(names, id.Name) {
				names = append(names, id.Name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no types with methods found")
	}
	return names
}

// standIn and standInCtx make stand-ins of the package's objects for the
// tests that load no CUDA, where zero values are refused: a Stream's device
// state, an Event's, a Graph's, a GraphExec's or a MemoryAsyncPool's
// context. No CUDA call is ever made with them.
var (
	standIn    = new(deviceState)
	standInCtx = unsafe.Pointer(standIn)
)

// TestClosedObjects checks that every operation on a closed object returns
// ErrClosed before any CUDA call (none is loaded here), and that a second
// Close does too.
func TestClosedObjects(t *testing.T) {
	closedLife := func(l *life) { l.Close() }
	s, e := &Stream{state: standIn}, &Event{ctx: standInCtx, we: new(waitEvent)}
	g, x := &Graph{ctx: standInCtx}, &GraphExec{ctx: standInCtx}
	m, p := &Module{kernels: map[string]*Kernel{}}, &MemoryAsyncPool{ctx: standInCtx}
	pool := &MemoryPool{arena: newArena(nil, nil)}
	k := &Kernel{m: m, name: "k"}
	for _, l := range []*life{&s.life, &e.life, &g.life, &x.life, &m.life, &p.life, &pool.life} {
		closedLife(l)
	}
	open := &Stream{state: standIn}
	_, kerr := m.Kernel("k")
	_, aerr := k.Attributes(0)
	_, merr := pool.Alloc(1)
	_, serr := (&MemoryPool{arena: newArena(nil, nil)}).AllocAsync(s, 1)
	_, ierr := g.Instantiate(nil)
	_, qerr := e.Query()
	_, cerr := s.EndCapture()
	for name, err := range map[string]error{
		"Stream.Synchronize":                       s.Synchronize(),
		"Stream.BeginCapture":                      s.BeginCapture(CaptureRelaxed),
		"Stream.EndCapture":                        cerr,
		"Stream.LaunchHostFunc":                    s.LaunchHostFunc(func() {}),
		"Stream.AddCallback":                       s.AddCallback(func(error) {}),
		"Stream.WaitEvent":                         open.WaitEvent(e),
		"Stream.Wait":                              s.Wait(context.Background()),
		"Stream.Close":                             s.Close(),
		"Event.Record":                             e.Record(nil),
		"Event.Query":                              qerr,
		"Event.Wait":                               e.Wait(context.Background()),
		"Event.Close":                              e.Close(),
		"Graph.Instantiate":                        ierr,
		"Graph.Close":                              g.Close(),
		"GraphExec.Launch":                         x.Launch(nil),
		"GraphExec.Update":                         (&GraphExec{ctx: standInCtx}).Update(g),
		"GraphExec.Close":                          x.Close(),
		"Module.Kernel":                            kerr,
		"Module.Close":                             m.Close(),
		"Kernel.Launch":                            k.Launch(nil, LaunchConfig{}),
		"Kernel.Attributes":                        aerr,
		"Kernel.SetAttribute":                      k.SetAttribute(0, KernelMaxDynamicSharedSize, 0),
		"MemoryAsyncPool.SetLimit":                 p.SetLimit(1),
		"MemoryAsyncPool.SetLimitFraction":         p.SetLimitFraction(0.5),
		"MemoryAsyncPool.FreeAllBlocks":            p.FreeAllBlocks(),
		"MemoryAsyncPool.Close":                    p.Close(),
		"MemoryPool.Alloc":                         merr,
		"MemoryPool.Close":                         pool.Close(),
		"MemoryPool.AllocAsync of a closed stream": serr,
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s: %v, want ErrClosed", name, err)
		}
	}
	select {
	case <-s.Done():
	default:
		t.Errorf("Done of a closed stream is not closed")
	}
	if err := e.Record(s); !errors.Is(err, ErrClosed) {
		t.Errorf("Record on a closed stream: %v, want ErrClosed", err)
	}
	if _, err := ElapsedTime(e, e); !errors.Is(err, ErrClosed) {
		t.Errorf("ElapsedTime of closed events: %v, want ErrClosed", err)
	}
	if _, err := (&Stream{dev: 1, state: standIn}).enter(0); err == nil || !strings.Contains(err.Error(), "device 1") {
		t.Errorf("a stream of device 1 for work on device 0: %v", err)
	}
	if _, err := (&MemoryPool{arena: newArena(nil, nil)}).AllocAsync(&Stream{h: 2}, 1); err == nil || !strings.Contains(err.Error(), "per-thread") {
		t.Errorf("a pool allocation for the per-thread default stream: %v", err)
	}
}

// TestMemoryFreeWaitsForCopies checks that Free waits for an operation in
// progress on the memory, and that later operations return ErrFreed.
func TestMemoryFreeWaitsForCopies(t *testing.T) {
	var host [64]byte
	m := &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}
	if !m.life.Acquire() { // a copy in progress
		t.Fatal("acquire failed")
	}
	freed := make(chan error)
	go func() { freed <- m.free() }()
	select {
	case err := <-freed:
		t.Fatalf("Free returned during a copy: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	m.life.Release()
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	p := MemoryPointer{mem: m}
	if err := p.Memset(0, 8); !errors.Is(err, ErrFreed) {
		t.Errorf("Memset after Free: %v, want ErrFreed", err)
	}
	if err := m.free(); !errors.Is(err, ErrFreed) {
		t.Errorf("second Free: %v, want ErrFreed", err)
	}
}

// TestSizesOverflow checks sizes and offsets that overflow int: each is
// refused before anything is allocated or copied.
func TestSizesOverflow(t *testing.T) {
	pool, h := newTestPool(t, 1<<20)
	for _, n := range []int{-1, 0} {
		refused(t, fmt.Sprintf("Alloc(%d)", n), second(pool.Alloc(n)), ErrInvalid, "it must be positive")
	}
	for _, n := range []int{maxSize + 1, 1<<62 + 1, int(^uint(0) >> 1), int(^uint(0)>>1) - 100} {
		refused(t, fmt.Sprintf("Alloc(%d)", n), second(pool.Alloc(n)), cudart.ErrorMemoryAllocation, "out of memory")
	}
	if got := counts(pool); got != (poolCounts{}) {
		t.Errorf("after refused allocations: %+v, want nothing held", got)
	}
	if _, allocs := h.stats(); allocs != 0 {
		t.Errorf("refused allocations reached the upstream allocator %d times", allocs)
	}
	refused(t, "SetLimit(-1)", pool.SetLimit(-1), ErrInvalid, "limit -1: it must not be negative")
	pool.SetLimit(1 << 20)
	pool.Alloc(1000)
	refused(t, "an allocation past the limit", second(pool.Alloc(maxSize)), cudart.ErrorMemoryAllocation, "the pool's limit is 1048576 bytes")
	var host [64]byte
	p := MemoryPointer{mem: &Memory{ptr: unsafe.Pointer(&host[0]), size: len(host)}, off: 8}
	big := int(^uint(0) >> 1)
	for _, n := range []int{big, -big, big - 7, -9} {
		refused(t, fmt.Sprintf("Add(%d)", n), second(p.Add(n)), ErrInvalid, "is outside the 64 bytes")
	}
	refused(t, "Memset of -1 bytes", p.Memset(0, -1), ErrInvalid, "size -1: it must not be negative")
	for _, n := range []int{big, big - 7, 57} {
		refused(t, fmt.Sprintf("Memset of %d bytes at offset 8 of 64", n), p.Memset(0, n), ErrInvalid, "are past the end of the 64 bytes")
	}
	refused(t, "AllocArray of 2^61 float64", second(AllocArray[float64](nil, big/4)), cudart.ErrorMemoryAllocation, "out of memory")
	a, err := AllocArray[float32](nil, 0)
	if err != nil || a.Len() != 0 {
		t.Fatalf("AllocArray(nil, 0) = %v, %v", a, err)
	}
	if err := a.CopyFromHost(nil); err != nil {
		t.Errorf("copying an empty slice to an empty array: %v", err)
	}
	if v, err := a.ToHost(); err != nil || len(v) != 0 {
		t.Errorf("ToHost of an empty array = %v, %v", v, err)
	}
	if err := a.Free(); err != nil {
		t.Errorf("Free of an empty array: %v", err)
	}
	if err := p.Memset(0, 0); err != nil {
		t.Errorf("Memset of 0 bytes: %v", err)
	}
}

// TestLockDevices checks the guard of the package's device-wide waits: a
// capture in progress refuses them, another such wait only delays them.
func TestLockDevices(t *testing.T) {
	captureMu.RLock() // a capture in progress
	if err := lockDevices(); !errors.Is(err, ErrCapturing) {
		t.Errorf("lockDevices during a capture: %v, want ErrCapturing", err)
	}
	captureMu.RUnlock()
	if err := lockDevices(); err != nil {
		t.Fatalf("lockDevices: %v", err)
	}
	second := make(chan error)
	go func() { second <- lockDevices() }()
	select {
	case err := <-second:
		t.Fatalf("a second lockDevices returned %v while the first held", err)
	case <-time.After(20 * time.Millisecond):
	}
	unlockDevices()
	if err := <-second; err != nil {
		t.Errorf("a second lockDevices, after the first: %v", err)
	}
	unlockDevices()
}
