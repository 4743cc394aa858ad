package dl

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
)

// ldSoCache is the system loader's cache of the libraries of its
// directories, as ldconfig writes it; a variable so that tests can point it
// at a stand-in.
var ldSoCache = "/etc/ld.so.cache"

// cacheFlags is the flags value of the loader cache's entries for this
// process's libraries: glibc's FLAG_ELF_LIBC6 and the architecture's
// FLAG_*_LIB64 (0 where the cache is not read).
var cacheFlags = map[string]int32{"amd64": 0x0303, "arm64": 0x0a03}[runtime.GOARCH]

// The formats of glibc's loader cache: a file of the new format alone
// (glibc 2.32 and later), or of the old one followed by the new one.
const (
	cacheMagicNew     = "glibc-ld.so.cache1.1"
	cacheMagicOld     = "ld.so-1.7.0"
	cacheHeaderNew    = 48 // magic, nlibs, len_strings, flags, padding, extension_offset, unused
	cacheEntryNew     = 24 // flags, key, value, osversion, hwcap
	cacheHeaderOld    = 16 // magic, nlibs
	cacheEntryOld     = 12 // flags, key, value
	cacheAlignNew     = 8
	cacheLittleEndian = 2 // the new header's flags: the entries are little-endian
	cacheBigEndian    = 3
)

// cachePaths returns the paths that the loader cache file at path gives
// for the library file name, for this process's architecture, in the
// cache's order: those the loader itself would try for the name, after
// $LD_LIBRARY_PATH. The entries for a CPU's glibc-hwcaps subdirectory are
// left out. It returns nil where the file cannot be read or is not a cache
// of a known format.
func cachePaths(path, name string) []string {
	if cacheFlags == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parseCache(b, name, cacheFlags)
}

// parseCache is cachePaths for the cache's contents b and the entries'
// flags value flags.
func parseCache(b []byte, name string, flags int32) []string {
	if bytes.HasPrefix(b, []byte(cacheMagicOld)) {
		if len(b) < cacheHeaderOld {
			return nil
		}
		n := uint64(binary.NativeEndian.Uint32(b[12:]))
		off := (cacheHeaderOld + n*cacheEntryOld + cacheAlignNew - 1) &^ (cacheAlignNew - 1)
		if off >= uint64(len(b)) {
			return nil
		}
		b = b[off:]
	}
	if !bytes.HasPrefix(b, []byte(cacheMagicNew)) || len(b) < cacheHeaderNew {
		return nil
	}
	var order binary.ByteOrder = binary.NativeEndian
	switch b[28] {
	case cacheLittleEndian:
		order = binary.LittleEndian
	case cacheBigEndian:
		order = binary.BigEndian
	}
	// The strings' offsets count from the new header.
	str := func(off uint32) (string, bool) {
		if uint64(off) >= uint64(len(b)) {
			return "", false
		}
		s, _, ok := bytes.Cut(b[off:], []byte{0})
		return string(s), ok
	}
	n := uint64(order.Uint32(b[20:]))
	var paths []string
	for i := range n {
		e := cacheHeaderNew + i*cacheEntryNew
		if e+cacheEntryNew > uint64(len(b)) {
			break
		}
		entry := b[e : e+cacheEntryNew]
		if int32(order.Uint32(entry)) != flags || order.Uint64(entry[16:]) != 0 {
			continue
		}
		key, ok := str(order.Uint32(entry[4:]))
		if !ok || key != name {
			continue
		}
		if value, ok := str(order.Uint32(entry[8:])); ok && filepath.IsAbs(value) {
			paths = append(paths, value)
		}
	}
	return paths
}
