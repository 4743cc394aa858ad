package highlevel

import (
	"fmt"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// CPUDevice stands for the host where Prefetch and Advise take a location
// (CUDA's cudaCpuDeviceId). It is not a device: other methods of Device
// return errors for it.
const CPUDevice Device = -1

// An Advice tells the unified memory driver how managed memory will be
// used (cudaMemoryAdvise); see MemoryPointer.Advise.
type Advice int

// The advice MemoryPointer.Advise gives.
const (
	// AdviseReadMostly: the memory is mostly read, so each processor may
	// keep a read-only copy. The device argument is ignored.
	AdviseReadMostly Advice = Advice(cudadrv.MEM_ADVISE_SET_READ_MOSTLY) // cudaMemAdviseSetReadMostly
	// AdviseUnsetReadMostly undoes AdviseReadMostly.
	AdviseUnsetReadMostly Advice = Advice(cudadrv.MEM_ADVISE_UNSET_READ_MOSTLY) // cudaMemAdviseUnsetReadMostly
	// AdvisePreferredLocation: the memory should live on the device given
	// (CPUDevice: host memory).
	AdvisePreferredLocation Advice = Advice(cudadrv.MEM_ADVISE_SET_PREFERRED_LOCATION) // cudaMemAdviseSetPreferredLocation
	// AdviseUnsetPreferredLocation undoes AdvisePreferredLocation.
	AdviseUnsetPreferredLocation Advice = Advice(cudadrv.MEM_ADVISE_UNSET_PREFERRED_LOCATION) // cudaMemAdviseUnsetPreferredLocation
	// AdviseAccessedBy: the device given accesses the memory, so it stays
	// mapped there wherever it lives.
	AdviseAccessedBy Advice = Advice(cudadrv.MEM_ADVISE_SET_ACCESSED_BY) // cudaMemAdviseSetAccessedBy
	// AdviseUnsetAccessedBy undoes AdviseAccessedBy.
	AdviseUnsetAccessedBy Advice = Advice(cudadrv.MEM_ADVISE_UNSET_ACCESSED_BY) // cudaMemAdviseUnsetAccessedBy
)

// errNotManaged refuses Prefetch and Advise on memory that is not managed.
var errNotManaged = invalid("memory is not managed (Managed(d).Alloc)")

// location checks that dev is CPUDevice or one of the devices CUDA
// counts: CUDA takes it as a C int, which would make 2³¹ the CPU and 2³²
// device 0.
func location(dev Device) error {
	if dev == CPUDevice {
		return nil
	}
	_, err := dev.state()
	return err
}

// managedSpan checks an operation on n bytes of managed memory from p and
// begins it, as span does; p.mem.life.Release ends it.
func (p MemoryPointer) managedSpan(n int, dev Device) (unsafe.Pointer, error) {
	if err := p.mem.live(); err != nil {
		return nil, err
	}
	if !p.mem.managed {
		return nil, errNotManaged
	}
	if dev < CPUDevice {
		return nil, invalid("no %v", dev)
	}
	d, _, err := p.span(n)
	if err != nil {
		return nil, err
	}
	if err := location(dev); err != nil {
		p.mem.life.Release()
		return nil, err
	}
	return d, nil
}

// Prefetch migrates n bytes of managed memory from p to dev (CPUDevice:
// host memory), ordered on s (cuMemPrefetchAsync). s is a stream of dev
// (nil: the legacy default stream of dev, or, for CPUDevice, of the
// memory's device); for CPUDevice s must be of the memory's device. An
// empty prefetch does nothing.
func (p MemoryPointer) Prefetch(s *Stream, n int, dev Device) error {
	if err := p.prefetch(n, dev, s); err != nil {
		return opErr(fmt.Sprintf("prefetch %d bytes of %s to %v", n, p.where(), dev), err)
	}
	return nil
}

func (p MemoryPointer) prefetch(n int, dev Device, s *Stream) error {
	if empty, err := p.empty(n); empty {
		return err
	}
	d, err := p.managedSpan(n, dev)
	if err != nil {
		return err
	}
	defer p.mem.life.Release()
	on := dev // the device whose context and stream queue the prefetch
	if dev == CPUDevice {
		on = p.mem.dev
		if s != nil {
			on = s.dev
		}
	}
	ctx, err := on.context()
	if err != nil {
		return err
	}
	sh, err := s.enter(on)
	if err != nil {
		return err
	}
	defer s.leave()
	s.keep(p.mem)
	return check("cuMemPrefetchAsync", driver.MemPrefetch(ctx, d, uintptr(n), int32(dev), sh))
}

// Advise gives advice about n bytes of managed memory from p, for dev
// (CPUDevice: the host) where the advice takes a location
// (cuMemAdvise).
func (p MemoryPointer) Advise(n int, advice Advice, dev Device) error {
	if err := p.advise(n, advice, dev); err != nil {
		return opErr(fmt.Sprintf("advise %v for %d bytes of %s on %v", advice, n, p.where(), dev), err)
	}
	return nil
}

func (p MemoryPointer) advise(n int, advice Advice, dev Device) error {
	if p.mem == nil || p.mem.size == 0 {
		return errNoMemory
	}
	if advice < AdviseReadMostly || advice > AdviseUnsetAccessedBy {
		return invalid("unknown %v", advice)
	}
	if empty, err := p.empty(n); empty {
		return err
	}
	d, err := p.managedSpan(n, dev)
	if err != nil {
		return err
	}
	defer p.mem.life.Release()
	ctx, err := p.mem.dev.context()
	if err != nil {
		return err
	}
	return check("cuMemAdvise", driver.MemAdvise(ctx, d, uintptr(n), int32(advice), int32(dev)))
}
