# make generate  regenerates the bindings from headers/ (all packages, in one process)
# make test      vet and tests for the default CUDA major and, with its tag, each other (-tags cuda12), highlevel's
#                and highlevel/collective's also under -race, and the regeneration check, then test-arm64 where its tools are (or
#                REQUIRE_ARM64=1, as CI sets), else a line saying it was skipped; needs no GPU and no CUDA
# make test-arm64 vet and tests for linux/arm64, cross-built and run under qemu-user
# make gpu       builds the GPU suite into build/gpu, packed as build/gpu.txz, for scripts/gpu.sh (run on a GPU machine),
#                with the tests of GPU_MAJOR_PKGS also built for each other major; it measures the regeneration here, where Go is
# make bench     runs the benchmarks and their C, CuPy and cuda.core twins here (needs a GPU and nvcc), then benchstat
# make benchstat compares Go with C in build/out/results.tgz, as gpu.sh left it here or on a GPU machine
#
# bench/ is a module of its own (bench/go.mod), so that its plotting and
# benchstat stay out of the library's module graph: the targets run its
# go commands with go -C bench.

GO ?= go
# A recipe line fails when any command of a pipeline fails (the
# regeneration benchmark's | tee).
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
# The suite travels to the GPU machine with the repository (64 MiB at most
# together): no symbol tables, and packed with xz (29 MiB, against gzip's 49).
STRIP := -ldflags='-s -w'
GPU_PKGS := cudart cudadrv nvrtc nvjitlink cublas cublaslt cusolver cusparse curand cufft nccl internal/dl highlevel highlevel/cudatest highlevel/collective highlevel/linalg highlevel/internal/mixed nvtx
# The build tags of the CUDA majors other than the default: those of the
# build lines of headers/cuda*.txt that are one tag (build cuda12).
MAJOR_TAGS := $(shell sed -n 's/^build  *\([A-Za-z0-9_]*\) *$$/\1/p' headers/cuda*.txt)
# The packages whose tests are also built for the other majors, as
# <pkg>_<tag>.test, to run where only the default major's libraries are:
# those of the driver API, and those that skip without their library.
GPU_MAJOR_PKGS := cudart cudadrv nvrtc internal/dl highlevel nvtx

# The tools of test-arm64 (see there); ARM64_TOOLS is set where all three
# are.
ARM64_CC ?= aarch64-linux-gnu-gcc
ARM64_QEMU ?= qemu-aarch64
ARM64_SYSROOT ?= /usr/aarch64-linux-gnu
ARM64_TOOLS := $(shell command -v $(ARM64_CC) >/dev/null && command -v $(ARM64_QEMU) >/dev/null && test -e $(ARM64_SYSROOT)/include/stdio.h && echo yes)

.PHONY: generate test gpu bench benchstat

# The tests here run with the repository's files: one that reads them
# fails where they are missing rather than skipping, as it does in the GPU
# suite's copy (internal/testsrc).
test test-arm64: export GOCUDA_TEST_SOURCES := 1

generate:
	$(GO) run ./gen -all .

test:
	$(GO) vet ./...
	$(GO) test ./...
	$(GO) -C bench vet ./...
	$(GO) -C bench test ./...
	$(foreach t,$(MAJOR_TAGS),$(GO) vet -tags $(t) ./... && $(GO) test -tags $(t) ./... &&) true
	$(foreach t,$(MAJOR_TAGS),$(GO) -C bench vet -tags $(t) ./... && $(GO) -C bench test -tags $(t) ./... &&) true
	$(GO) test -race ./highlevel ./highlevel/collective
ifeq ($(ARM64_TOOLS)$(REQUIRE_ARM64),)
	@echo "make test: test-arm64 skipped: it needs $(ARM64_CC), $(ARM64_QEMU) and the arm64 C library in $(ARM64_SYSROOT) (Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
else
	$(MAKE) test-arm64
endif

# test-arm64 vets every package for linux/arm64 and runs its tests there,
# cross-built and under qemu-user, so that layouts and values are checked
# against C as arm64's compiler sees the headers. The tests run what they
# build for arm64 (themselves, C programs) under $GOCUDA_TEST_EXEC. It needs
# Debian's gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# (ARM64_CC, ARM64_QEMU, ARM64_SYSROOT).
.PHONY: test-arm64
ARM64 := GOARCH=arm64 CGO_ENABLED=1 CC=$(ARM64_CC) QEMU_LD_PREFIX=$(ARM64_SYSROOT) GOCUDA_TEST_EXEC=$(ARM64_QEMU)
test-arm64:
	$(ARM64) $(GO) vet ./...
	$(ARM64) $(GO) test -exec $(ARM64_QEMU) ./...
	$(ARM64) $(GO) -C bench vet ./...
	$(ARM64) $(GO) -C bench test -exec $(ARM64_QEMU) ./...

gpu:
	rm -rf build/gpu
	mkdir -p build/gpu/py
	$(foreach p,$(GPU_PKGS),$(GO) test $(STRIP) -c -o build/gpu/$(subst /,_,$(p)).test ./$(p) &&) true
	$(GO) test $(STRIP) -race -c -o build/gpu/highlevel_race.test ./highlevel
	$(GO) test $(STRIP) -race -c -o build/gpu/highlevel_internal_mixed_race.test ./highlevel/internal/mixed
	$(GO) test $(STRIP) -race -c -o build/gpu/highlevel_collective_race.test ./highlevel/collective
	$(foreach t,$(MAJOR_TAGS),$(foreach p,$(GPU_MAJOR_PKGS),$(GO) test $(STRIP) -tags $(t) -c -o build/gpu/$(subst /,_,$(p))_$(t).test ./$(p) &&)) true
	$(foreach e,devicequery saxpy pipeline graphloop memprofile sgemm bandwidth allreduce,$(GO) build $(STRIP) -o build/gpu/$(e) ./examples/$(e) &&) true
	$(GO) -C bench test $(STRIP) -c -o $(CURDIR)/build/gpu/bench.test .
	CGO_ENABLED=0 $(GO) -C bench build $(STRIP) -o $(CURDIR)/build/gpu/benchtable ./cmd/benchtable
	cp bench/c/*.c bench/c/*.cu bench/c/*.h headers/nccl-2.28.3/nccl.h scripts/gpu.sh build/gpu/
	cp bench/py/bench.py build/gpu/py/
	GOMAXPROCS=2 $(GO) test -run '^$$' -bench Regenerate -benchtime 1x -count 5 ./golden | tee build/gpu/bench-regen.txt
	tar -C build -cf - gpu | xz -T0 -3 > build/gpu.txz

bench: gpu
	cd build/gpu && OUT=../out bash gpu.sh bench
	$(MAKE) benchstat

benchstat:
	tar -xzf build/out/results.tgz -C build/out
	$(GO) -C bench tool benchstat -ignore goos,goarch,pkg,cpu,/gomaxprocs c=$(CURDIR)/build/out/all-c.txt go=$(CURDIR)/build/out/all-go.txt
