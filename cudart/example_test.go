package cudart_test

import (
	"errors"
	"fmt"
	"log"
	"unsafe"

	"github.com/gocuda/cuda/cudart"
)

func Example() {
	var n int32
	if err := cudart.GetDeviceCount(&n); err != nil {
		log.Fatal(err) // without CUDA: *cudart.LibraryError, listing the paths tried
	}
	for i := range n {
		var p cudart.DeviceProp
		if err := cudart.GetDeviceProperties(&p, i); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d: %s, %d MiB\n", i, cString(p.Name[:]), p.TotalGlobalMem>>20)
	}
}

func ExampleMalloc() {
	data := []float32{1, 2, 3, 4}
	size := uint64(len(data)) * 4
	var d unsafe.Pointer
	if err := cudart.Malloc(&d, size); errors.Is(err, cudart.ErrorMemoryAllocation) {
		log.Fatal("out of device memory")
	} else if err != nil {
		log.Fatal(err)
	}
	defer cudart.Free(d)
	if err := cudart.Memcpy(d, unsafe.Pointer(&data[0]), size, cudart.MemcpyHostToDevice); err != nil {
		log.Fatal(err)
	}
}

// cString returns the NUL-terminated string at the start of b.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
