// Package mixed holds a randomized test of package highlevel, and of
// highlevel/linalg with it, that mixes every kind of their work in one
// program and runs several such programs at once on one GPU (issue 45).
// Each kind of work is tested alone elsewhere; the faults this test looks
// for were seen only with everything at once: linalg's handles destroyed
// by ClearCaches under calls in progress, a crash in a plain copy to the
// host while pools, busy streams and views came and went, corrupted bytes
// in pool blocks written and read with staged copies while kernels,
// captures and graph launches ran, Done closed before the host functions
// it waits for had run because another goroutine began a capture, and bad
// devices or advice accepted by Prefetch and Advise.
//
// The package has no code but its tests: TestGPUMixed (mixed_test.go)
// says what a program does and which environment variables scale it;
// world_test.go holds what a program's goroutines share, model_test.go the
// host's copy of the device memory every read is checked against,
// expect_test.go the errors each operation may return, the ops_*_test.go
// files the operations (ops_built_test.go those of graphs built node by
// node, issue 48), and children_test.go the mode that runs programs
// in several processes at once (scripts/gpu.sh mixed). Without a GPU the
// test skips.
package mixed
