package cudadrv

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/stubtest"
)

// stubAttrDriver is a libcuda whose attribute calls answer values of the
// sizes the headers give, and fail where the size they are told is wrong.
const stubAttrDriver = `
#include <stddef.h>
#include <string.h>
#include <stdio.h>
int cuInit(unsigned int flags) { return 0; }
static unsigned long long pool[16];
static int wide(int a) { return a >= 4; } /* RELEASE_THRESHOLD on: cuuint64_t */
int cuMemPoolSetAttribute(void *p, int a, void *v) { pool[a] = wide(a) ? *(unsigned long long *)v : (unsigned long long)*(int *)v; return 0; }
int cuMemPoolGetAttribute(void *p, int a, void *v) { if (wide(a)) *(unsigned long long *)v = pool[a]; else *(int *)v = (int)pool[a]; return 0; }
int cuDeviceGetGraphMemAttribute(int dev, int a, void *v) { *(unsigned long long *)v = 1000 + a; return 0; }
int cuPointerGetAttribute(void *data, int a, unsigned long long ptr) {
	if (a == 9) { *(int *)data = 3; return 0; }                          /* DEVICE_ORDINAL */
	if (a == 7) { *(unsigned long long *)data = ptr + 1; return 0; }     /* BUFFER_ID */
	return 1;
}
int cuMemRangeGetAttribute(void *data, size_t n, int a, unsigned long long p, size_t count) {
	if (a == 3) { for (size_t i = 0; i < n / 4; i++) ((int *)data)[i] = i == 0 ? 0 : -2; return 0; } /* ACCESSED_BY */
	if (n != 4) return 1;
	*(int *)data = 1;
	return 0;
}
int cuDeviceGetName(char *name, int len, int dev) { snprintf(name, len, "Stub GPU %d", dev); return 0; }
int cuCoredumpGetAttributeGlobal(int a, void *v, size_t *size) {
	static const char file[] = "core.cuda";
	if (a == 1) { if (*size != sizeof(_Bool)) return 1; *(_Bool *)v = 1; return 0; } /* ENABLE_ON_EXCEPTION */
	if (a == 5) { if (*size < sizeof file) return 1; memcpy(v, file, sizeof file); *size = sizeof file; return 0; } /* FILE */
	return 1;
}
`

// TestStubAttributes runs TestStubAttributesChild against stubAttrDriver.
func TestStubAttributes(t *testing.T) {
	lib := stubtest.Library(t, "libcuda.so.1", stubAttrDriver)
	stubtest.Child(t, "TestStubAttributesChild", "GOCUDA_CUDA="+lib)
}

// TestStubAttributesChild checks each family of typed attribute access
// against the stub: the value of the right type is passed, with its size,
// and comes back; a value of another size is refused before the call.
func TestStubAttributesChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestStubAttributes")
	check(t, "Init", Init(0))

	t.Run("MemPool", func(t *testing.T) {
		const pool = MemoryPool(1)
		check(t, "MemPoolSetAttributeOf", MemPoolSetAttributeOf(pool, MEMPOOL_ATTR_RELEASE_THRESHOLD, uint64(1<<40+5)))
		if v, err := MemPoolGetAttributeOf[uint64](pool, MEMPOOL_ATTR_RELEASE_THRESHOLD); err != nil || v != 1<<40+5 {
			t.Errorf("MemPoolGetAttributeOf[uint64](RELEASE_THRESHOLD) = %d, %v; want %d", v, err, uint64(1<<40+5))
		}
		check(t, "MemPoolSetAttributeOf", MemPoolSetAttributeOf(pool, MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, int32(-7)))
		if v, err := MemPoolGetAttributeOf[int32](pool, MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC); err != nil || v != -7 {
			t.Errorf("MemPoolGetAttributeOf[int32](REUSE_ALLOW_OPPORTUNISTIC) = %d, %v; want -7", v, err)
		}
		// An int for a cuuint64_t would let the driver write 8 bytes into 4.
		_, err := MemPoolGetAttributeOf[int32](pool, MEMPOOL_ATTR_USED_MEM_HIGH)
		var vt *ValueTypeError
		if !errors.As(err, &vt) || vt.Want != reflect.TypeFor[uint64]() || vt.Got != reflect.TypeFor[int32]() {
			t.Fatalf("MemPoolGetAttributeOf[int32](USED_MEM_HIGH) error = %v, want a *ValueTypeError", err)
		}
		if want := "cudadrv: CU_MEMPOOL_ATTR_USED_MEM_HIGH takes a value of type uint64, not int32"; err.Error() != want {
			t.Errorf("error text %q, want %q", err, want)
		}
		if err := MemPoolSetAttributeOf(pool, MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, uint64(1)); !errors.As(err, &vt) {
			t.Errorf("MemPoolSetAttributeOf(uint64) of an int attribute = %v, want a *ValueTypeError", err)
		}
		// The refused set did not reach the driver.
		if v, err := MemPoolGetAttributeOf[int32](pool, MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES); err != nil || v != 0 {
			t.Errorf("after a refused set, REUSE_FOLLOW_EVENT_DEPENDENCIES = %d, %v; want 0, nil", v, err)
		}
	})
	t.Run("GraphMem", func(t *testing.T) {
		if v, err := DeviceGetGraphMemAttributeOf[uint64](0, GRAPH_MEM_ATTR_RESERVED_MEM_HIGH); err != nil || v != 1000+uint64(GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
			t.Errorf("DeviceGetGraphMemAttributeOf = %d, %v", v, err)
		}
		if _, err := DeviceGetGraphMemAttributeOf[[8]byte](0, GRAPH_MEM_ATTR_USED_MEM_CURRENT); err == nil {
			t.Error("DeviceGetGraphMemAttributeOf[[8]byte] was not refused")
		}
	})
	t.Run("Pointer", func(t *testing.T) {
		if v, err := PointerGetAttributeOf[int32](POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0x1000); err != nil || v != 3 {
			t.Errorf("PointerGetAttributeOf[int32](DEVICE_ORDINAL) = %d, %v; want 3", v, err)
		}
		if v, err := PointerGetAttributeOf[uint64](POINTER_ATTRIBUTE_BUFFER_ID, 0x1000); err != nil || v != 0x1001 {
			t.Errorf("PointerGetAttributeOf[uint64](BUFFER_ID) = %#x, %v; want 0x1001", v, err)
		}
		// The pointer attributes the headers type only in prose.
		if POINTER_ATTRIBUTE_CONTEXT.ValueType() != reflect.TypeFor[Context]() || POINTER_ATTRIBUTE_HOST_POINTER.ValueType() != reflect.TypeFor[unsafe.Pointer]() {
			t.Errorf("ValueType of CONTEXT, HOST_POINTER = %v, %v", POINTER_ATTRIBUTE_CONTEXT.ValueType(), POINTER_ATTRIBUTE_HOST_POINTER.ValueType())
		}
		if _, err := PointerGetAttributeOf[bool](POINTER_ATTRIBUTE_IS_MANAGED, 0x1000); err == nil {
			t.Error("PointerGetAttributeOf[bool](IS_MANAGED) was not refused: the driver may write 4 bytes")
		}
		if _, err := PointerGetAttributeOf[int32](Pointer_attribute(999), 0x1000); err == nil || !strings.Contains(err.Error(), "no type") {
			t.Errorf("an attribute of no known type = %v, want a *ValueTypeError saying so", err)
		}
	})
	t.Run("MemRange", func(t *testing.T) {
		if v, err := MemRangeGetAttributeOf[int32](MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 0x1000, 64); err != nil || v != 1 {
			t.Errorf("MemRangeGetAttributeOf[int32](READ_MOSTLY) = %d, %v; want 1", v, err)
		}
		// A list takes an array: dataSize is its size.
		if v, err := MemRangeGetAttributeOf[[3]int32](MEM_RANGE_ATTRIBUTE_ACCESSED_BY, 0x1000, 64); err != nil || v != [3]int32{0, -2, -2} {
			t.Errorf("MemRangeGetAttributeOf[[3]int32](ACCESSED_BY) = %v, %v; want [0 -2 -2]", v, err)
		}
		if _, err := MemRangeGetAttributeOf[int64](MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 0x1000, 64); err == nil {
			t.Error("MemRangeGetAttributeOf[int64](READ_MOSTLY) was not refused")
		}
		if MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE.ValueType() != reflect.TypeFor[MemLocationType]() {
			t.Errorf("PREFERRED_LOCATION_TYPE.ValueType() = %v", MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE.ValueType())
		}
	})
	t.Run("StringBuffer", func(t *testing.T) {
		if s, err := DeviceGetNameString(64, 2); err != nil || s != "Stub GPU 2" {
			t.Errorf("DeviceGetNameString(64, 2) = %q, %v; want \"Stub GPU 2\"", s, err)
		}
		if s, err := DeviceGetNameString(5, 2); err != nil || s != "Stub" {
			t.Errorf("DeviceGetNameString(5, 2) = %q, %v; want \"Stub\" (cut to the buffer)", s, err)
		}
		if _, err := DeviceGetNameString(0, 2); err == nil {
			t.Error("DeviceGetNameString(0, ...) succeeded")
		}
	})
	t.Run("Coredump", func(t *testing.T) {
		if v, err := CoredumpGetAttributeGlobalOf[bool](COREDUMP_ENABLE_ON_EXCEPTION); err != nil || !v {
			t.Errorf("CoredumpGetAttributeGlobalOf[bool](ENABLE_ON_EXCEPTION) = %v, %v; want true", v, err)
		}
		v, err := CoredumpGetAttributeGlobalOf[[1024]byte](COREDUMP_FILE)
		if s, _, _ := strings.Cut(string(v[:]), "\x00"); err != nil || s != "core.cuda" {
			t.Errorf("CoredumpGetAttributeGlobalOf[[1024]byte](FILE) = %q, %v; want core.cuda", s, err)
		}
		if _, err := CoredumpGetAttributeGlobalOf[int32](COREDUMP_ENABLE_ON_EXCEPTION); err == nil {
			t.Error("CoredumpGetAttributeGlobalOf[int32] of a bool was not refused")
		}
	})
}
