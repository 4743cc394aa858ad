package highlevel_test

import (
	"encoding/hex"
	"log"
	"os"
	"os/exec"

	"github.com/gocuda/cuda/highlevel"
)

// One process exports device memory and an event that marks when the
// memory is written; another, here started with both handles in its
// environment, opens them, waits for the event and reads the memory.
func ExampleOpenIPCMemory() {
	dev := highlevel.Device(0)
	if env := os.Getenv("SHARED"); env != "" { // the other process
		var mh highlevel.IPCMemHandle
		var eh highlevel.IPCEventHandle
		b, _ := hex.DecodeString(env[:160])
		if err := mh.UnmarshalBinary(b); err != nil {
			log.Fatal(err)
		}
		b, _ = hex.DecodeString(env[160:])
		if err := eh.UnmarshalBinary(b); err != nil {
			log.Fatal(err)
		}
		mem, err := highlevel.OpenIPCMemory(dev, mh)
		if err != nil {
			log.Fatal(err)
		}
		defer mem.Free()
		ready, err := highlevel.OpenIPCEvent(dev, eh)
		if err != nil {
			log.Fatal(err)
		}
		defer ready.Close()
		s, _ := highlevel.NewStream(dev, nil)
		defer s.Close()
		s.WaitEvent(ready) // the work queued on s from now on waits for the writer
		// ... queue kernels and copies of mem on s ...
		return
	}
	mem, _ := dev.Alloc(1 << 20)
	defer mem.Free() // after the other process has freed its mapping
	ready, _ := highlevel.NewEvent(dev, &highlevel.EventOptions{Interprocess: true, DisableTiming: true})
	defer ready.Close()
	mem.MemsetAsync(nil, 1, mem.Size())
	ready.Record(nil)
	mh, err := mem.IPCHandle()
	if err != nil {
		log.Fatal(err)
	}
	eh, err := ready.IPCHandle()
	if err != nil {
		log.Fatal(err)
	}
	mb, _ := mh.MarshalBinary()
	eb, _ := eh.MarshalBinary()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SHARED="+hex.EncodeToString(mb)+hex.EncodeToString(eb))
	if err := cmd.Run(); err != nil {
		log.Fatal(err)
	}
}
