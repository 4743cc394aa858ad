#!/usr/bin/env bash
# gpu.sh runs the GPU suite that `make gpu` built into build/gpu, on a machine
# with a GPU, CUDA and nvcc but no Go. Logs go to $OUT (default build/out);
# the last lines printed are the summary.
set -u
cd "$(dirname "$0")"
out=${OUT:-../out}
mkdir -p "$out"
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/nvidia-smi.txt"

for t in *.test; do
	echo "== $t"
	./"$t" -test.v -test.count=1 >"$out/${t%.test}.log" 2>&1 || status=1
	grep -E '^(--- |=== RUN|ok|FAIL|PASS)' "$out/${t%.test}.log" | grep -v '=== RUN' | tail -40
done

echo "== highlevel under compute-sanitizer (memcheck)"
compute-sanitizer --tool memcheck --print-limit 20 ./highlevel.test -test.run GPU -test.count=1 >"$out/sanitizer.txt" 2>&1 || status=1
grep -E 'ERROR SUMMARY|^(ok|FAIL|PASS)' "$out/sanitizer.txt"

echo "== devicequery"
./devicequery >"$out/devicequery.txt" 2>&1 || status=1
grep -E '^Device [0-9]|Result' "$out/devicequery.txt"

echo "== benchmarks: Go, then the C twin"
# One pinned core for both, so that the scheduler does not add noise.
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'GetDevice|PoolMallocFree' -test.benchmem -test.count 10 -test.benchtime 5000000x | tee "$out/bench-go.txt"
taskset -c 3 ./bench.test -test.run '^$' -test.bench 'EventRecord|StreamCreateDestroy|MallocAsyncFree' -test.count 5 -test.benchtime 200000x | tee -a "$out/bench-go.txt"
inc=${CUDA_HOME:-/usr/local/cuda}/include
for c in *.c; do
	nvcc -O2 -I"$inc" -o "${c%.c}" "$c" -lcudart -lcuda -ldl && taskset -c 3 ./"${c%.c}" | tee "$out/bench-c-${c%.c}.txt" || status=1
done

echo "== summary"
for l in "$out"/*.log; do
	printf '%s: %d passed, %d failed, %d skipped\n' "$(basename "$l" .log)" \
		"$(grep -c -- '^--- PASS' "$l")" "$(grep -c -- '^--- FAIL' "$l")" "$(grep -c -- '^--- SKIP' "$l")"
done
# Only a few files come back from the device machine: pack the logs in one.
tar -C "$out" -czf logs.tgz . && mv logs.tgz "$out/"
exit $status
