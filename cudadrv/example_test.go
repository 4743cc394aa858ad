package cudadrv_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/cudadrv"
	"github.com/gocuda/cuda/cudart"
)

func Example() {
	if err := cudadrv.Init(0); err != nil {
		log.Fatal(err) // without CUDA: *cudadrv.LibraryError, listing the paths tried
	}
	var n int32
	if err := cudadrv.DeviceGetCount(&n); err != nil {
		log.Fatal(err)
	}
	for i := range n {
		var dev cudadrv.Device
		if err := cudadrv.DeviceGet(&dev, i); err != nil {
			log.Fatal(err)
		}
		name := make([]byte, 256)
		if err := cudadrv.DeviceGetName(&name[0], int32(len(name)), dev); err != nil {
			log.Fatal(err)
		}
		var sms int32
		if err := cudadrv.DeviceGetAttribute(&sms, cudadrv.DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d: %s, %d SMs\n", i, name[:bytes.IndexByte(name, 0)], sms)
	}
}

// A kernel from PTX: load the module, pin the arguments the driver reads
// through kernelParams, and launch.
func ExampleLaunchKernel() {
	// The current context belongs to the OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ctx cudadrv.Context
	if err := cudadrv.DevicePrimaryCtxRetain(&ctx, 0); err != nil {
		log.Fatal(err)
	}
	defer cudadrv.DevicePrimaryCtxRelease(0)
	if err := cudadrv.CtxSetCurrent(ctx); err != nil {
		log.Fatal(err)
	}

	ptx, err := os.ReadFile("testdata/fill.ptx")
	if err != nil {
		log.Fatal(err)
	}
	ptx = append(ptx, 0) // the driver reads a C string
	var mod cudadrv.Module
	if err := cudadrv.ModuleLoadData(&mod, unsafe.Pointer(&ptx[0])); err != nil {
		log.Fatal(err)
	}
	defer cudadrv.ModuleUnload(mod)
	var fill cudadrv.Function
	if err := cudadrv.ModuleGetFunction(&fill, mod, "fill"); err != nil {
		log.Fatal(err)
	}

	const n = 1024
	var out cudadrv.Deviceptr
	if err := cudadrv.MemAlloc(&out, n*4); errors.Is(err, cudadrv.ERROR_OUT_OF_MEMORY) {
		log.Fatal("out of device memory")
	} else if err != nil {
		log.Fatal(err)
	}
	defer cudadrv.MemFree(out)

	args := &struct {
		out     cudadrv.Deviceptr
		n, seed uint32
		params  [3]unsafe.Pointer
	}{out: out, n: n, seed: 1}
	args.params = [3]unsafe.Pointer{unsafe.Pointer(&args.out), unsafe.Pointer(&args.n), unsafe.Pointer(&args.seed)}
	var pinner runtime.Pinner
	pinner.Pin(args)
	defer pinner.Unpin()
	if err := cudadrv.LaunchKernel(fill, n/256, 1, 1, 256, 1, 1, 0, 0, &args.params[0], nil); err != nil {
		log.Fatal(err)
	}
	host := make([]uint32, n)
	if err := cudadrv.MemcpyDtoH(unsafe.Pointer(&host[0]), out, n*4); err != nil {
		log.Fatal(err)
	}
	fmt.Println(host[:4]) // [1 4 7 10]
}

// Runtime and driver handles convert with a Go conversion; device pointers
// with DeviceptrOf and Pointer.
func ExampleDeviceptrOf() {
	var s cudart.Stream
	if err := cudart.StreamCreate(&s); err != nil {
		log.Fatal(err)
	}
	defer cudart.StreamDestroy(s)
	var p unsafe.Pointer
	if err := cudart.Malloc(&p, 1<<20); err != nil {
		log.Fatal(err)
	}
	defer cudart.Free(p)
	if err := cudadrv.MemsetD8Async(cudadrv.DeviceptrOf(p), 0xff, 1<<20, cudadrv.Stream(s)); err != nil {
		log.Fatal(err)
	}
	if err := cudart.StreamSynchronize(s); err != nil {
		log.Fatal(err)
	}
}

// The per-thread default stream is chosen before the first call.
func ExampleUsePerThreadDefaultStream() {
	if err := cudadrv.UsePerThreadDefaultStream(); err != nil {
		log.Fatal(err) // the driver was loaded already
	}
	if err := cudadrv.Init(0); err != nil {
		log.Fatal(err)
	}
}
