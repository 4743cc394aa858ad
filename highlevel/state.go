package highlevel

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The package's process-wide state: every variable that lives as long as
// the process and changes is here, each with why there is one for the
// process. The rest of the package's state belongs to its objects.

// The driver and the devices: the driver is loaded once, and the devices it
// counts are fixed for the process.

// loadOnce loads the driver and looks the shim's functions up, once.
var (
	loadOnce sync.Once
	loadErr  error
	// missing[i] is why the driver lacks the shim's symbol i, a function
	// of a later version than baseVersion; nil where the driver has it.
	missing []error
)

// devices is every device's state, made once, when the first operation
// names a device: the driver's count of devices is fixed for the process.
var (
	devicesOnce sync.Once
	devices     []deviceState
	devicesErr  error
)

// defaultDevice is DefaultDevice's choice, made once ($CUDA_DEVICE,
// ~/.cuda-device, the first usable device): a process has one default.
var (
	defaultOnce   sync.Once
	defaultDevice Device
	defaultErr    error
)

// peers[d][p] is set once EnablePeerAccess(d, p) succeeded.
var peers sync.Map // [2]Device -> struct{}

// Captures. CUDA's stream captures constrain every thread of the process
// (a global capture refuses calls on all of them; a device-wide wait would
// invalidate any capture), so what the package knows of them is
// process-wide.

// captures counts the stream captures in progress (Stream.BeginCapture to
// Stream.EndCapture), and each holds captureMu shared: a device-wide wait
// would invalidate them, so the package's own hold captureMu exclusively,
// one at a time (waitMu), taken only when no capture is in progress.
var (
	captures  atomic.Int32
	captureMu sync.RWMutex
	waitMu    sync.Mutex
)

// capturesIdle is closed, and cleared, once no capture is in progress, for
// what waits for the captures to end (afterCaptures); nil while none
// waits.
var capturesIdle struct {
	sync.Mutex
	ch chan struct{}
}

// uncountCapture counts a capture as ended, and wakes the waits for no
// capture once none is in progress.
func uncountCapture() {
	if captures.Add(-1) != 0 {
		return
	}
	capturesIdle.Lock()
	if capturesIdle.ch != nil && captures.Load() == 0 {
		close(capturesIdle.ch)
		capturesIdle.ch = nil
	}
	capturesIdle.Unlock()
}

// afterCaptures returns once no capture the package began is in progress,
// or with ctx's error. Work on the legacy default stream waits for every
// blocking stream, which no capture allows: a wait on that stream waits
// for the captures to end rather than fail, since a capture begun
// elsewhere in the program says nothing of the work waited for. A destroy
// DestroyOutsideCaptures put off waits here too.
func afterCaptures(ctx context.Context) error {
	capturesIdle.Lock()
	if captures.Load() == 0 {
		capturesIdle.Unlock()
		return nil
	}
	if capturesIdle.ch == nil {
		capturesIdle.ch = make(chan struct{})
	}
	ch := capturesIdle.ch
	capturesIdle.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// captureOps is held by every call that queues work on a stream taking
// part in a capture, or takes a stream into a capture or out of one: the
// driver's captures are not safe for concurrent calls. With one thread
// capturing on a stream, a second thread's cuEventRecord, cuStreamWaitEvent
// or join on that stream crashed driver 580 within seconds, corrupting its
// heap, in a C program as in Go; independent captures on different streams
// ran clean. Ended flips only while it is held, and a stream joins a
// capture only while its joins are held alone, so an operation that holds
// it after enter, for a stream in a capture, finds the stream still in the
// capture at leave, and one that does not, still out of any.
var captureOps sync.Mutex

// staging keeps captures and staged copies apart: a capture in
// CaptureGlobal mode refuses queries from every thread, which a staged copy
// makes until its buffers are free, and any capture refuses work on the
// legacy default stream, which a staged copy there queues chunk by chunk:
// refused after its first chunks, it would have changed part of its
// destination. A staged copy holds the lock shared and stages only while
// global is 0, and on the legacy default stream while captures is 0; a
// capture counts itself exclusively before it begins.
var staging struct {
	sync.RWMutex
	global int
}

// globalDestroys are the destroys of graphs and executable graphs that
// the shim refused during a capture in CaptureGlobal mode
// (driver.Capturing), to make once such captures end.
var globalDestroys struct {
	sync.Mutex
	later []func() int32
}

// closedCaptures holds the streams Close found capturing, to destroy once
// their captures end.
var closedCaptures struct {
	sync.Mutex
	streams []*Stream
}

// Memory: the process's allocators and pools (CuPy's default allocator and
// pools are per process too), its host registrations, and what was lost.

// allocator holds the process's default allocator: nil until SetAllocator
// sets it or its first use fixes it.
var allocator struct {
	mu    sync.Mutex
	set   Allocator // SetAllocator's; nil: DefaultMemoryPool
	fixed atomic.Pointer[Allocator]
}

// defaultPool is DefaultMemoryPool's pool, made at its first use: one per
// process, as CuPy's default memory pool.
var defaultPool struct {
	once sync.Once
	p    *MemoryPool
	err  error
}

// pinnedAllocator holds the process's pinned memory allocator: nil until
// SetPinnedMemoryAllocator sets it or its first use fixes it.
var pinnedAllocator struct {
	mu    sync.Mutex
	set   func(int) (*PinnedMemory, error)
	fixed atomic.Pointer[func(int) (*PinnedMemory, error)]
}

// defaultPinnedPool is DefaultPinnedMemoryPool's pool, made at its first
// use: one per process, as CuPy's.
var defaultPinnedPool = sync.OnceValue(NewPinnedMemoryPool)

// registrations keeps each registration of host memory, and so its
// Pinner, reachable until it is unregistered (see registration).
var registrations sync.Map // *registration -> struct{}

// lost is the memory (and the modules, registrations and pools) that
// could not be given back where it was freed or dropped, for freeLost to
// give back once the devices are idle: any goroutine may lose some, so one
// list serves the process.
var lost struct {
	mu  sync.Mutex
	mem []lostMemory
	any atomic.Bool // whether mem has any, for a check without mu
}

// Callbacks and waiting: CUDA runs a context's host functions on one thread
// of its own, and the waits share bounds on the threads they hold.

// dispatchOnce starts the first dispatcher.
var dispatchOnce sync.Once

// callbacks counts the program's functions running as stream callbacks or
// host functions, so that inCallback asks the shim only while one runs.
var callbacks atomic.Int32

// waiter watches the events recorded again while goroutines wait for
// their earlier records (waitReq): one poller serves the process.
var waiter struct {
	mu       sync.Mutex
	pending  []*waitReq
	dead     []*waitEvent                 // to destroy
	helpers  map[unsafe.Pointer][]uintptr // idle helper streams, by context
	running  bool
	sleeping bool // the poller is in (or about to enter) driver.PollSleep
	wake     chan struct{}
}

// procs is GOMAXPROCS at the first wait, which bounds the waiters that
// sleep in C and those that spin.
var procs = sync.OnceValue(func() int32 { return int32(runtime.GOMAXPROCS(0)) })

// graphObjects serializes the calls that make, change and destroy graphs
// and executable graphs (instantiation, update, destruction), held
// exclusively, with the launches and uploads of executable graphs, held
// shared: driver 580 crashed in cuGraphExecDestroy while other goroutines
// instantiated and updated executable graphs of the same graph, and, under
// compute-sanitizer, in cuGraphLaunch while another destroyed the graph
// the executable graph was made of.
var graphObjects sync.RWMutex

// napping and spinning count the waiters sleeping in C and spinning, for
// those bounds.
var napping, spinning atomic.Int32

// Caches of what does not change in a process: compiled kernels, the kinds
// of launch arguments and of array elements.

// compiled caches Compile's results per device and compileKey.
var compiled = NewMemo(func(_ Device, k compileKey) (*Compiled, error) {
	return compile(k.source, k.name, k.arch, split(k.args), split(k.names))
})

// argKinds caches kindOf's verdicts by type.
var argKinds sync.Map // reflect.Type -> argKind

// elemChecks caches checkElem's verdicts by type.
var elemChecks sync.Map // reflect.Type -> error (nil: fit)

// Tests.

// launchHook, set by tests, runs just before a launch's call into the
// shim.
var launchHook func()
