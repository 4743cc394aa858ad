package linalg

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/highlevel"
	"github.com/gocuda/cuda/highlevel/internal/buffer"
	"github.com/gocuda/cuda/highlevel/internal/refusal"
)

var errNilArray = fmt.Errorf("%w: nil *Array", highlevel.ErrNil)

// cublas returns o's cuBLAS operation.
func (o Op) cublas() (cublas.Operation, error) {
	switch o {
	case NoTrans:
		return cublas.OP_N, nil
	case Trans:
		return cublas.OP_T, nil
	}
	return 0, refusal.Errorf("%v is neither NoTrans nor Trans", o)
}

// checkDim checks that a size lies in cuBLAS's range, 0..2³¹-1.
func checkDim(name string, v int) error {
	if v < 0 || v > math.MaxInt32 {
		return refusal.Errorf("%s is %d: sizes must be in 0..%d", name, v, math.MaxInt32)
	}
	return nil
}

// fits checks that an array of length elements holds batch rows×cols
// matrices, stride elements apart; rows, cols and batch are at least 1 and
// at most 2³¹-1, and stride is not negative.
func fits(name string, length, rows, cols, stride, batch int) error {
	elems := rows * cols // < 2⁶²
	need := elems
	if batch > 1 {
		if stride > (math.MaxInt-elems)/(batch-1) {
			return refusal.Errorf("%d matrices of %s, %d elements apart, overflow", batch, name, stride)
		}
		need += (batch - 1) * stride
	}
	if length < need {
		if batch > 1 {
			return refusal.Errorf("%s holds %d elements; %d matrices of %d×%d, %d elements apart, need %d", name, length, batch, rows, cols, stride, need)
		}
		return refusal.Errorf("%s is %d×%d but holds %d elements", name, rows, cols, length)
	}
	return nil
}

// vectors checks the vectors of Axpy and Dot: neither nil, as long, and at
// most 2³¹-1 elements. It returns their length.
func vectors[T Float](op string, x, y *highlevel.Array[T]) (int32, error) {
	if x == nil || y == nil {
		return 0, opError(op, errNilArray)
	}
	if x.Len() != y.Len() {
		return 0, opError(op, refusal.Errorf("x has %d elements, y %d", x.Len(), y.Len()))
	}
	if err := checkDim("the length", x.Len()); err != nil {
		return 0, opError(op, err)
	}
	return int32(x.Len()), nil
}

// operands are the arrays of a call: their addresses, and the memory a
// highlevel.Borrow holds while the call queues work on it; and the device
// of the call.
type operands struct {
	mem [3]highlevel.MemoryPointer
	ptr [3]unsafe.Pointer
	n   int
	dev highlevel.Device
}

// check finds the addresses of arrays (buffer.Of), which must all be on
// one device, the stream's, and that device; the first is the output.
func (o *operands) check(op string, s *highlevel.Stream, arrays ...buffer.Buffer) error {
	dev := -1
	for i, a := range arrays {
		p, d, err := a.Check()
		if err != nil {
			return opError(op, err)
		}
		o.ptr[i] = p
		if p != nil {
			o.mem[o.n] = a.Memory()
			o.n++
		}
		if d < 0 {
			continue
		}
		if dev >= 0 && d != dev {
			return opError(op, refusal.Errorf("arrays on %v and %v", highlevel.Device(dev), highlevel.Device(d)))
		}
		dev = d
	}
	switch {
	case s != nil:
		o.dev = s.Device() // Stream.Borrow refuses it for another device
		if dev >= 0 && highlevel.Device(dev) != o.dev {
			return opError(op, refusal.Errorf("arrays on %v, stream on %v", highlevel.Device(dev), o.dev))
		}
	case dev >= 0:
		o.dev = highlevel.Device(dev)
	default: // managed memory on the legacy default stream
		d, err := highlevel.DefaultDevice()
		if err != nil {
			return opError(op, err)
		}
		o.dev = d
	}
	return nil
}

// memory returns the memory the call names, for its Borrow.
func (o *operands) memory() []highlevel.MemoryPointer { return o.mem[:o.n] }
