package nvtx_test

import (
	"runtime"

	"github.com/gocuda/cuda/nvtx"
)

func train(steps int) {}

// Ranges and marks show up on the timeline of a profiler such as
// nsys profile --trace=nvtx; without one, the calls do nothing.
func Example() {
	defer nvtx.Range("main")()
	nvtx.Mark("start")
	for step := range 3 {
		end := nvtx.RangeC("step", 0xff76b900)
		train(step)
		end()
	}
	nvtx.MarkC("done", 0xffff0000)
}

// A goroutine that pairs RangePush and RangePop itself keeps its OS
// thread in between, since NVTX nests ranges per thread.
func ExampleRangePush() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	nvtx.RangePush("load")
	// ...
	nvtx.RangePop()
}
