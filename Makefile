# make generate  regenerates the bindings from headers/
# make test      vet, tests (highlevel's also under -race) and the regeneration check; needs no GPU and no CUDA
# make gpu       builds the GPU suite into build/gpu, packed as build/gpu.tgz, for scripts/gpu.sh (run on a GPU machine)
# make bench     runs the benchmarks here (they skip without a GPU)

GO ?= go
# The suite travels to the GPU machine (64 MiB at most): no symbol tables.
STRIP := -ldflags='-s -w'
GPU_PKGS := cudart cudadrv nvrtc nvjitlink cublas cublaslt cusolver cusparse curand cufft nccl internal/dl highlevel highlevel/cudatest highlevel/nvtx bench

.PHONY: generate test gpu bench

generate:
	$(GO) generate ./...

test:
	$(GO) vet ./...
	$(GO) test ./...
	$(GO) test -race ./highlevel

gpu:
	rm -rf build/gpu
	mkdir -p build/gpu
	$(foreach p,$(GPU_PKGS),$(GO) test $(STRIP) -c -o build/gpu/$(subst /,_,$(p)).test ./$(p) &&) true
	$(GO) test $(STRIP) -race -c -o build/gpu/highlevel_race.test ./highlevel
	$(foreach e,devicequery saxpy bandwidth,$(GO) build $(STRIP) -o build/gpu/$(e) ./examples/$(e) &&) true
	cp bench/c/*.c bench/c/*.cu bench/c/*.h headers/nccl-2.28.3/nccl.h scripts/gpu.sh build/gpu/
	tar -C build -czf build/gpu.tgz gpu

bench:
	$(GO) test -run '^$$' -bench . ./bench
