package highlevel

import (
	"unsafe"

	"github.com/gocuda/cuda/highlevel/internal/hook"
)

// The subpackages' access to the package's internals; see package hook.
func init() {
	hook.EnterStream = func(s any, dev int) (uintptr, error) {
		h, err := s.(*Stream).enter(Device(dev))
		return uintptr(h), err
	}
	hook.LeaveStream = func(s any) { s.(*Stream).leave() }
	hook.HoldArray = holdArray
	hook.ReleaseArray = func(a any) {
		if m := arrayMemory(a); m != nil {
			m.life.Release()
		}
	}
	hook.KeepArray = func(s, a any) {
		if m := arrayMemory(a); m != nil {
			s.(*Stream).keep(m)
		}
	}
	hook.OnClearCaches = func(f func()) {
		memos.Lock()
		memos.clear = append(memos.clear, &clearer{func() bool { f(); return true }})
		memos.Unlock()
	}
}

// arrayMemory returns the memory of a, a *Array[T] of any T; nil for an
// empty or nil array.
func arrayMemory(a any) *Memory {
	return a.(interface{ MemoryPointer() MemoryPointer }).MemoryPointer().mem
}

func holdArray(a any) (unsafe.Pointer, int, error) {
	arr := a.(interface {
		MemoryPointer() MemoryPointer
		Len() int
	})
	p := arr.MemoryPointer()
	if p.mem == nil {
		if arr.Len() != 0 {
			return nil, -1, ErrFreed // an allocator gave no memory
		}
		return nil, -1, nil // empty
	}
	if !p.mem.life.Acquire() {
		return nil, -1, ErrFreed
	}
	if p.mem.managed {
		return p.Ptr(), -1, nil
	}
	return p.Ptr(), int(p.mem.dev), nil
}
