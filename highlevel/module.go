package highlevel

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/highlevel/internal/driver"
)

// A Module is loaded device code (PTX, CUBIN or fatbin): a CUDA library,
// which belongs to no device. CUDA loads its code into a device's context
// when one of its kernels is first used there (Kernel.Launch, Attribute,
// the occupancy functions), so one Module serves every device whose
// architecture its code fits. It is safe for use by several goroutines. A
// Module that is not closed stays loaded until the process exits.
//
// The zero value is not usable: make one with LoadModule or
// LoadModuleFile; its methods return an error wrapping ErrNil.
type Module struct {
	lib   uintptr
	image unsafe.Pointer // the C copy of the image, freed by Close
	life  life

	mu      sync.Mutex
	kernels map[string]*Kernel // nil in a zero Module

	holds holdCount // the graphs that launch its kernels, and whether Close came
}

// LoadModule loads device code: PTX (as NVRTC or nvcc -ptx writes it), a
// CUBIN or a fatbin, such as Compile returns. It concerns no device and
// makes no context: the code of a CUBIN compiled for one device (Compile
// with CompileOptions.Arch from Device.Arch) runs on the devices of that
// architecture, PTX on every device of its architecture or a later one.
func LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, opErr("load module", invalid("empty image"))
	}
	if err := initDevices(); err != nil {
		return nil, opErr("load module", err)
	}
	if isPTX(image) && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0) // PTX is read as a C string
	}
	m := &Module{image: driver.CBytes(image), kernels: map[string]*Kernel{}}
	if err := check("cuLibraryLoadData", driver.LibraryLoad(nil, &m.lib, m.image)); err != nil {
		driver.CFree(m.image)
		return nil, opErr("load module", err)
	}
	return m, nil
}

// isPTX reports whether an image is PTX text rather than an ELF CUBIN or a
// fatbin.
func isPTX(image []byte) bool {
	return !bytes.HasPrefix(image, []byte("\x7fELF")) && !bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba})
}

// LoadModuleFile loads the device code in the named file (.ptx, .cubin or
// .fatbin).
func LoadModuleFile(name string) (*Module, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, opErr("load module", err)
	}
	m, err := LoadModule(b)
	if err != nil {
		return nil, opErr("load module "+name, inner(err))
	}
	return m, nil
}

// Kernel returns the kernel of the module named name, as the device code
// spells it: the name given to extern "C" functions, or the lowered
// (mangled) name of others (Compiled.LoweredNames gives it). Its parameters
// are read in the context of the lowest-numbered device the program has
// used, or DefaultDevice's when it has used none, as host memory's are.
func (m *Module) Kernel(name string) (*Kernel, error) {
	if err := m.usable(); err != nil {
		return nil, err
	}
	if inCallback() { // before m.mu, held by calls that may wait for the callback
		return nil, ErrInCallback
	}
	if !m.life.Acquire() {
		return nil, ErrClosed
	}
	defer m.life.Release()
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := m.kernels[name]; k != nil {
		return k, nil
	}
	cname := append([]byte(name), 0)
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	// The parameters' layout needs a context: the one host memory uses
	// (a device the program has used), not whichever the thread has.
	ctx, err := hostContext()
	if err != nil {
		return nil, err
	}
	k := &Kernel{m: m, name: name, funcs: make([]atomic.Uintptr, n)}
	op := fmt.Sprintf("kernel %q", name)
	if err := check(op, driver.LibraryGetKernel(ctx, &k.k, m.lib, &cname[0])); err != nil {
		return nil, err
	}
	var offsets, sizes [maxParams]uint32
	var np int32
	if err := check(op, driver.KernelParams(ctx, k.k, &offsets[0], &sizes[0], maxParams, &np)); err != nil {
		return nil, err
	}
	classes, ok := paramClasses(name)
	if !ok || len(classes) != int(np) {
		classes = nil
	}
	k.params = make([]param, np)
	for i := range k.params {
		k.params[i] = param{off: uint32(offsets[i]), size: uint32(sizes[i])}
		if classes != nil {
			k.params[i].class = classes[i]
		}
		k.size = max(k.size, int(offsets[i]+sizes[i]))
	}
	m.kernels[name] = k
	return k, nil
}

// usable returns the error of a method called on a nil or zero Module; nil
// for a Module the package made.
func (m *Module) usable() error {
	if m == nil {
		return nilError("Module")
	}
	if m.kernels == nil {
		return zeroError("Module", "LoadModule")
	}
	return nil
}

// maxParams bounds the parameters of a kernel; CUDA's 32764 bytes of
// parameters hold at most 8191 of 4 bytes.
const maxParams = 8191

// Close unloads the module. Launches and other operations in progress
// finish first; later ones return ErrClosed, and so does a second Close.
// Kernels of the module already queued run to their end: Close waits for
// the devices that launched them. While a stream capture is in progress,
// that wait would invalidate it: Close returns ErrCapturing and leaves the
// module open. A module whose kernels a Graph or GraphExec launches is
// unloaded after the last of them is closed, as memory dropped without
// Free is given back: by a later allocation, once the work queued until
// then has run (see Memory).
func (m *Module) Close() error {
	if err := m.usable(); err != nil {
		return err
	}
	if err := lockDevices(); err != nil {
		return opErr("close module", err)
	}
	defer unlockDevices()
	if err := closing(&m.life); err != nil {
		return err
	}
	if m.holds.release() { // graphs launch its kernels: the last to let go unloads it
		return nil
	}
	var errs []error
	m.mu.Lock()
	for d := range m.launchedOn() {
		if ctx, err := d.context(); err == nil {
			errs = append(errs, check("cuCtxSynchronize", driver.CtxSynchronize(ctx)))
		}
	}
	m.mu.Unlock()
	return join(append(errs, m.unload())...)
}

// hold records that a graph launches the module's kernels; Close then
// leaves the module to the last unhold. It is called during a launch, which
// Close waits for, so never after Close.
func (m *Module) hold() { m.holds.add() }

// unhold ends a hold. The last one after Close unloads the module, as lost
// memory is freed, once the work queued so far has run.
func (m *Module) unhold() {
	if m.holds.done() {
		lostMemory{module: m}.lose()
	}
}

// unload unloads the module, once its kernels have run.
func (m *Module) unload() error {
	err := check("cuLibraryUnload", driver.LibraryUnload(nil, m.lib))
	driver.CFree(m.image)
	return err
}

// launchedOn returns the devices that the module's kernels were looked up
// for, and so may have been launched on; m.mu is held.
func (m *Module) launchedOn() map[Device]bool {
	devs := map[Device]bool{}
	for _, k := range m.kernels {
		for d := range k.funcs {
			if k.funcs[d].Load() != 0 {
				devs[Device(d)] = true
			}
		}
	}
	return devs
}
