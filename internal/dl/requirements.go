//go:build !cgo || !linux

package dl

// The CUDA bindings load NVIDIA's libraries with dlopen through cgo: they
// build only on linux (amd64 or arm64), with cgo enabled (CGO_ENABLED=1)
// and a C compiler (gcc or clang). Without them, the build stops here, at
// an identifier that says so.
var _ = the_CUDA_bindings_need_linux_and_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
