#!/usr/bin/env bash
# gpu.sh runs the GPU suite that `make gpu` built into build/gpu, on a machine
# with a GPU, CUDA and nvcc but no Go. Logs go to $OUT/logs.tgz (default
# build/out) and the benchmark results beside it; the last lines printed are
# the summary. "gpu.sh tests" runs only the tests and examples, "gpu.sh bench"
# only the benchmarks, "gpu.sh nccl" only the all-reduce benchmark and its
# twin, so that each part fits in one call to the device.
set -u
part=${1:-all}
cd "$(dirname "$0")"
out=${OUT:-../out}
mkdir -p "$out"
log=$(mktemp -d)
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$log/nvidia-smi.txt"

# NCCL may come only as a Python wheel, off the loader's path: the tests,
# the Go benchmark and the C twin all use the file found here. NVLink
# multicast stays off (NCCL_NVLS_ENABLE=0 is set on the machine).
export NCCL_NVLS_ENABLE=0
ncclso=${GOCUDA_NCCL:-$(ldconfig -p | awk '$1 == "libnccl.so.2" {print $NF; exit}')}
[ -n "$ncclso" ] || ncclso=$(find / -path /proc -prune -o -name libnccl.so.2 -print 2>/dev/null | head -1)
export GOCUDA_NCCL=$ncclso
echo "NCCL: $ncclso"

if [ "$part" != bench ] && [ "$part" != nccl ]; then
for t in *.test; do
	echo "== $t"
	./"$t" -test.v -test.count=1 >"$log/${t%.test}.log" 2>&1 || status=1
	grep -E '^(--- |=== RUN|ok|FAIL|PASS)' "$log/${t%.test}.log" | grep -v '=== RUN' | tail -40
done

echo "== highlevel under compute-sanitizer (memcheck)"
# The tests provoke API errors on purpose (out of memory); memcheck's own
# findings are what counts.
HL_SANITIZER=1 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 ./highlevel.test -test.run GPU -test.count=1 >"$log/sanitizer.txt" 2>&1 || status=1
grep -E 'ERROR SUMMARY|^(ok|FAIL|PASS)' "$log/sanitizer.txt"

echo "== examples"
./devicequery >"$log/devicequery.txt" 2>&1 || status=1
grep -E '^Device [0-9]|Result' "$log/devicequery.txt"
./saxpy 2>&1 | tee "$log/saxpy.txt" || status=1
./bandwidth 2>&1 | tee "$log/bandwidth.txt" || status=1
fi

if [ "$part" != tests ] && [ "$part" != nccl ]; then
echo "== benchmarks: Go, then the C twin"
# One pinned core for both, so that the scheduler does not add noise.
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'GetDevice|PoolMallocFree' -test.benchmem -test.count 10 -test.benchtime 5000000x | tee "$log/bench-go.txt"
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'EventRecord|StreamCreateDestroy|MallocAsyncFree|LaunchEmpty|LaunchArgs' -test.benchmem -test.count 5 -test.benchtime 200000x | tee -a "$log/bench-go.txt"
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'LaunchSync' -test.count 5 -test.benchtime 50000x | tee -a "$log/bench-go.txt"
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'Sgemm8192' -test.count 5 -test.benchtime 30x | tee -a "$log/bench-go.txt"
inc=${CUDA_HOME:-/usr/local/cuda}/include
for c in *.c *.cu; do
	[ "$c" = nccl.cu ] && continue
	nvcc -O2 -arch=native -I"$inc" -o "${c%.*}" "$c" -lcudart -lcuda -ldl -lcublas && taskset -c 3 ./"${c%.*}" | tee "$log/bench-c-${c%.*}.txt" || status=1
done
fi

if [ "$part" != tests ]; then
echo "== all-reduce over all GPUs: Go, then C (NCCL's threads need more than one core)"
inc=${CUDA_HOME:-/usr/local/cuda}/include
./bench.test -test.run '^$' -test.bench '^BenchmarkAllReduce$' -test.count 5 -test.benchtime 0.5s -test.v | tee "$log/bench-go-nccl.txt"
# The twin links the library the Go side loaded, through a libnccl.so link.
ln -sf "$ncclso" libnccl.so
nvcc -O2 -arch=native -I"$inc" -I. -o nccl nccl.cu -L. -lnccl -Xlinker -rpath="$(dirname "$ncclso")" -lcudart -lcuda -ldl \
	&& ./nccl | tee "$log/bench-c-nccl.txt" || status=1
fi

echo "== summary"
for l in "$log"/*.log; do
	[ -e "$l" ] || continue
	printf '%s: %d passed, %d failed, %d skipped\n' "$(basename "$l" .log)" \
		"$(grep -c -- '^--- PASS' "$l")" "$(grep -c -- '^--- FAIL' "$l")" "$(grep -c -- '^--- SKIP' "$l")"
done
# Only a few files come back from the device machine: pack the logs in one.
tar -C "$log" -czf "$out/logs.tgz" .
cp "$log"/bench-*.txt "$out/" 2>/dev/null
exit $status
