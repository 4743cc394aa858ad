package highlevel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
)

// ErrArgument is wrapped by the errors of Kernel.Launch about its
// arguments: a wrong count, or a value whose type or size does not fit its
// parameter.
var ErrArgument = errors.New("highlevel: bad kernel argument")

// pack writes the arguments into buf at the parameters' offsets, and
// returns the device the launch goes to: s's, or for a nil s the device of
// the first memory argument (managed memory aside), or DefaultDevice when
// there is none. Every memory argument must be usable there. Without an
// error, it holds the memory of every argument that is memory (an
// operation in progress on it, which Free waits for) until releaseArgs.
//
// Arguments of the types of the kernel's shape take packShape; the rest
// take putArg, one by one, and the first launch whose arguments have a
// shape records it.
func (k *Kernel) pack(buf []byte, args []any, s *Stream) (Device, error) {
	sh := k.shape.Load()
	if sh != nil {
		if d, ok := packShape(buf, args, s, *sh); ok {
			return d, nil
		}
	}
	if len(args) != len(k.params) {
		return 0, invalid("%w: %s takes %d arguments, got %d", ErrArgument, k.name, len(k.params), len(args))
	}
	d, chosen := Device(0), false
	if s != nil {
		d, chosen = s.dev, true
	}
	bad, badDev := -1, Device(0) // the first memory argument d cannot use
	for i, a := range args {
		p := &k.params[i]
		dev, err := putArg(buf[p.off:p.off+p.size], a, p.class)
		if err == nil && graphMemoryMade.Load() && (s == nil || !s.nodes) {
			if m := argMemory(&args[i]); m != nil && m.graph != nil {
				k.releaseArgs(args[:i+1])
				return 0, invalid("%w: %s argument %d: %w", ErrArgument, k.name, i, errGraphMemory)
			}
		}
		switch {
		case err != nil:
			k.releaseArgs(args[:i])
			return 0, invalid("%w: %s argument %d: %w", ErrArgument, k.name, i, err)
		case dev < 0:
		case !chosen:
			d, chosen = dev, true
		case bad < 0 && dev != d && !d.canAccess(dev):
			bad, badDev = i, dev
		}
	}
	var err error
	switch {
	case bad >= 0 && s == nil:
		err = invalid("%w: %s argument %d is memory of %v, the arguments before it of %v", ErrArgument, k.name, bad, badDev, d)
	case bad >= 0:
		err = invalid("%w: %s argument %d is memory of %v, launched on %v without peer access to it", ErrArgument, k.name, bad, badDev, d)
	case !chosen:
		d, err = DefaultDevice()
	}
	if err != nil {
		k.releaseArgs(args)
		return 0, err
	}
	if sh == nil {
		if sh := k.newShape(args); sh != nil {
			k.shape.CompareAndSwap(nil, sh)
		}
	}
	return d, nil
}

// A shape is the types of the arguments of a launch that putArg accepted,
// when each was a number of 4 or 8 bytes or an Array, with their
// parameters' offsets. A launch whose arguments have the same types takes
// packShape: putArg's checks of them would give the same answers again,
// and what it would write is the number's bytes or the Array's address.
type shape []shapeArg

type shapeArg struct {
	word uintptr      // the type word of the argument, as typeWord reads it
	typ  reflect.Type // its type, which keeps word's alive
	off  uint32       // its parameter's offset
	kind uint32       // shape4, shape8 or shapeArray
}

const (
	shape4     = iota // a number of 4 bytes, which an interface holds by address
	shape8            // a number of 8 bytes
	shapeArray        // an *Array[T]
)

// newShape returns the shape of args, which putArg accepted, or nil when
// they have none.
func (k *Kernel) newShape(args []any) *shape {
	for i, a := range args {
		if _, ok := shapeKind(a, k.params[i].size); !ok {
			return nil
		}
	}
	sh := make(shape, len(args))
	for i := range args {
		kind, _ := shapeKind(args[i], k.params[i].size)
		sh[i] = shapeArg{word: typeWord(&args[i]), typ: reflect.TypeOf(args[i]), off: k.params[i].off, kind: kind}
	}
	return &sh
}

// shapeKind returns the kind of shape argument a is, for a parameter of
// size bytes.
func shapeKind(a any, size uint32) (uint32, bool) {
	if _, ok := a.(anyArray); ok {
		return shapeArray, true
	}
	switch reflect.TypeOf(a).Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64,
		reflect.Uintptr, reflect.Float32, reflect.Float64:
		switch size {
		case 4:
			return shape4, true
		case 8:
			return shape8, true
		}
	}
	return 0, false
}

// packShape is pack for arguments of the types of sh. It reports false, for
// pack to take them with its errors, when a type differs, an Array's memory
// is freed or one the launch's device cannot use, or for a nil s no
// argument is device memory.
func packShape(buf []byte, args []any, s *Stream, sh shape) (Device, bool) {
	if len(args) != len(sh) {
		return 0, false
	}
	d, chosen := s.Device(), s != nil
	nodes := chosen && s.nodes
	// buf holds every parameter at its offset.
	base := unsafe.Pointer(unsafe.SliceData(buf))
	for i := range args {
		a, sa := &args[i], &sh[i]
		if typeWord(a) != sa.word {
			releaseShaped(args[:i], sh) // the Arrays before it, acquired
			return 0, false
		}
		dst, v := unsafe.Add(base, sa.off), anyData(a)
		switch sa.kind {
		case shape4:
			*(*uint32)(dst) = *(*uint32)(v)
		case shape8:
			*(*uint64)(dst) = *(*uint64)(v)
		default:
			// Every Array[T] starts with its MemoryPointer.
			mp := (*MemoryPointer)(v)
			if mp == nil || mp.mem == nil || !mp.mem.life.Acquire() {
				releaseShaped(args[:i], sh)
				return 0, false
			}
			switch m := mp.mem; {
			case m.graph != nil && !nodes: // refused below (pack)
				releaseShaped(args[:i+1], sh)
				return 0, false
			case m.managed:
			case !chosen:
				d, chosen = m.dev, true
			case m.dev != d && !d.canAccess(m.dev):
				releaseShaped(args[:i+1], sh)
				return 0, false
			}
			*(*uint64)(dst) = uint64(uintptr(mp.Ptr()))
		}
	}
	if !chosen {
		releaseShaped(args, sh)
	}
	return d, chosen
}

// releaseShaped ends the hold packShape took on the memory of args, whose
// types are those of sh.
func releaseShaped(args []any, sh shape) {
	for i := range args {
		if sh[i].kind == shapeArray {
			(*MemoryPointer)(anyData(&args[i])).mem.life.Release()
		}
	}
}

// releaseArgs ends the hold pack took on the memory of args.
func (k *Kernel) releaseArgs(args []any) {
	var sh shape
	if p := k.shape.Load(); p != nil {
		sh = *p
	}
	for i := range args {
		if m := shapedMemory(&args[i], i, sh); m != nil {
			m.life.Release()
		}
	}
}

// forArgMemory calls fn with the memory of each of args that pack took
// hold of.
func (k *Kernel) forArgMemory(args []any, fn func(*Memory)) {
	var sh shape
	if p := k.shape.Load(); p != nil {
		sh = *p
	}
	for i := range args {
		if m := shapedMemory(&args[i], i, sh); m != nil {
			fn(m)
		}
	}
}

// shapedMemory returns the memory of argument i, a, that pack took hold
// of, or nil: for an argument of the type of the kernel's shape sh, as
// releaseShaped finds it, for the others through argMemory.
func shapedMemory(a *any, i int, sh shape) *Memory {
	if i < len(sh) && typeWord(a) == sh[i].word {
		if sh[i].kind == shapeArray {
			return (*MemoryPointer)(anyData(a)).mem
		}
		return nil
	}
	return argMemory(a)
}

// argMemory returns the memory an argument putArg accepted is, or nil.
func argMemory(a *any) *Memory {
	switch v := (*a).(type) {
	case MemoryPointer:
		return v.mem
	case *Memory:
		return v
	case anyArray:
		if p := (*MemoryPointer)(anyData(a)); p != nil {
			return p.mem
		}
	}
	return nil
}

// putArg writes a, which must be exactly len(dst) bytes and fit a
// parameter of the given class, and returns the device of a's memory when
// a is device memory, else -1 (managed memory included). Without an error,
// it holds a's memory when a is memory (argMemory). It never lets a
// escape, so that the caller's conversions to any stay on its stack.
func putArg(dst []byte, a any, class paramClass) (dev Device, err error) {
	var mem *Memory
	var kind paramClass // what a is, to compare with class
	switch v := a.(type) {
	case int:
		kind, err = paramSigned, put64(dst, uint64(v), "int")
	case uint:
		kind, err = paramUnsigned, put64(dst, uint64(v), "uint")
	case int8:
		kind, err = paramSigned, put8(dst, uint8(v), "int8")
	case uint8:
		kind, err = paramUnsigned, put8(dst, v, "uint8")
	case bool:
		var b uint8
		if v {
			b = 1
		}
		kind, err = paramBool, put8(dst, b, "bool")
	case int16:
		kind, err = paramSigned, put16(dst, uint16(v), "int16")
	case uint16:
		kind, err = paramUnsigned, put16(dst, v, "uint16")
		if class == paramHalf {
			kind = paramHalf // the bits of a __half or __nv_bfloat16
		}
	case int32:
		kind, err = paramSigned, put32(dst, uint32(v), "int32")
	case uint32:
		kind, err = paramUnsigned, put32(dst, v, "uint32")
	case float32:
		kind, err = paramFloat, put32(dst, math.Float32bits(v), "float32")
	case int64:
		kind, err = paramSigned, put64(dst, uint64(v), "int64")
	case uint64:
		kind, err = paramUnsigned, put64(dst, v, "uint64")
	case float64:
		kind, err = paramDouble, put64(dst, math.Float64bits(v), "float64")
	case Conditional:
		kind, err = paramUnsigned, put64(dst, uint64(v), "Conditional")
	case uintptr:
		kind, err = paramPointer, put64(dst, uint64(v), "uintptr")
		if class == paramSigned || class == paramUnsigned {
			kind = class // an address as an integer
		}
	case unsafe.Pointer:
		kind, err = paramPointer, put64(dst, uint64(uintptr(v)), "unsafe.Pointer")
	case cudadrv.Deviceptr:
		kind, err = paramPointer, put64(dst, uint64(v), "cudadrv.Deviceptr")
	case MemoryPointer:
		kind, err, mem = paramPointer, putMemory(dst, v, reflect.TypeOf(a)), v.mem
	case *Memory:
		kind, mem = paramPointer, v
		if err = v.live(); err != nil {
			err = fmt.Errorf("*Memory: %w", err)
		} else {
			err = put64(dst, uint64(uintptr(v.ptr)), "*Memory")
		}
	case anyArray:
		// Every Array[T] starts with its MemoryPointer. A call of a method
		// of v would make a escape, and the caller's conversions to any
		// with it.
		data := anyData(&a)
		if data == nil {
			return -1, fmt.Errorf("%w: nil %v", ErrNil, reflect.TypeOf(a))
		}
		p := *(*MemoryPointer)(data)
		kind, err, mem = paramPointer, putMemory(dst, p, reflect.TypeOf(a)), p.mem
	case nil:
		return -1, errors.New("nil")
	default:
		t := reflect.TypeOf(a)
		data := anyData(&a)
		switch kindOf(t) {
		case argValue:
			if int(t.Size()) != len(dst) {
				return -1, fmt.Errorf("%v is %d bytes, the parameter %d", t, t.Size(), len(dst))
			}
			kind = paramUnknown
			if class == paramHalf {
				kind = paramHalf // a struct of the half's bits
			}
			copy(dst, unsafe.Slice((*byte)(data), len(dst)))
		default:
			return -1, fmt.Errorf("%v cannot be passed to a kernel", t)
		}
	}
	if err != nil {
		return -1, err
	}
	if !fits(kind, class) {
		return -1, fmt.Errorf("%v cannot be passed for a %v parameter", reflect.TypeOf(a), class)
	}
	switch {
	case mem == nil:
		return -1, nil
	case !mem.life.Acquire(): // freed since its check
		return -1, fmt.Errorf("%v: %w", reflect.TypeOf(a), ErrFreed)
	case mem.managed:
		return -1, nil
	}
	return mem.dev, nil
}

// anyData returns the value word of *a: the pointer an interface holds, or
// the address of its copy of a value that is not a pointer.
func anyData(a *any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(a))[1] }

// typeWord returns the type word of *a, equal for values of one type, as
// an integer: a shape keeps it without keeping a.
func typeWord(a *any) uintptr { return uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(a))[0]) }

// fits reports whether a Go argument of kind may be passed for a parameter
// of class: any where the class is unknown, and any integer for an integer.
func fits(kind, class paramClass) bool {
	switch {
	case class == paramUnknown || kind == class:
		return true
	case class == paramSigned || class == paramUnsigned:
		return kind == paramSigned || kind == paramUnsigned
	}
	return false
}

// putMemory writes the address of p, the memory of an argument of type t,
// which it names only in an error: a type's name costs time to format.
func putMemory(dst []byte, p MemoryPointer, t reflect.Type) error {
	if err := p.mem.live(); err != nil {
		return fmt.Errorf("%v: %w", t, err)
	}
	if len(dst) != 8 {
		return sizeError(t.String(), 8, len(dst))
	}
	binary.NativeEndian.PutUint64(dst, uint64(uintptr(p.Ptr())))
	return nil
}

// anyArray is every *Array[T], which Launch recognizes by this method rather
// than by reflection.
type anyArray interface{ isArray() }

func sizeError(what string, size, want int) error {
	return fmt.Errorf("%s is %d bytes, the parameter %d", what, size, want)
}

func put8(dst []byte, v uint8, what string) error {
	if len(dst) != 1 {
		return sizeError(what, 1, len(dst))
	}
	dst[0] = v
	return nil
}

func put16(dst []byte, v uint16, what string) error {
	if len(dst) != 2 {
		return sizeError(what, 2, len(dst))
	}
	binary.NativeEndian.PutUint16(dst, v)
	return nil
}

func put32(dst []byte, v uint32, what string) error {
	if len(dst) != 4 {
		return sizeError(what, 4, len(dst))
	}
	binary.NativeEndian.PutUint32(dst, v)
	return nil
}

func put64(dst []byte, v uint64, what string) error {
	if len(dst) != 8 {
		return sizeError(what, 8, len(dst))
	}
	binary.NativeEndian.PutUint64(dst, v)
	return nil
}

// An argKind is how putArg passes a type it has no case for.
type argKind int

const (
	argInvalid argKind = iota
	argValue           // a struct or array without pointers
)

func kindOf(t reflect.Type) argKind {
	if k, ok := argKinds.Load(t); ok {
		return k.(argKind)
	}
	k := argInvalid
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Array {
		if !hasPointers(t) && t.Size() > 0 {
			k = argValue
		}
	}
	argKinds.Store(t, k)
	return k
}
