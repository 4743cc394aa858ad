//go:build !cgo || !linux || !(amd64 || arm64)

package dl

// The CUDA bindings load NVIDIA's libraries with dlopen through cgo, and
// gen lays their types out as C does on linux/amd64 and linux/arm64: they
// build only there, with cgo enabled (CGO_ENABLED=1) and a C compiler (gcc
// or clang). Elsewhere, the build stops here, at an identifier that says so.
var _ = the_CUDA_bindings_need_linux_amd64_or_arm64_and_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
