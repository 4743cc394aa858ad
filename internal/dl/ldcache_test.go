package dl

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// cacheEntry is an entry of a stand-in loader cache.
type cacheEntry struct {
	flags      int32
	key, value string
	hwcap      uint64
}

// ldCache returns a loader cache of glibc's new format holding entries, in
// the byte order order, preceded by an old-format part of as many entries
// where old is set, as ldconfig -c compat writes it.
func ldCache(entries []cacheEntry, order binary.AppendByteOrder, old bool) []byte {
	var strs []byte
	offs := make([][2]uint32, len(entries))
	base := cacheHeaderNew + len(entries)*cacheEntryNew
	for i, e := range entries {
		offs[i][0] = uint32(base + len(strs))
		strs = append(append(strs, e.key...), 0)
		offs[i][1] = uint32(base + len(strs))
		strs = append(append(strs, e.value...), 0)
	}
	b := []byte(cacheMagicNew)
	b = order.AppendUint32(b, uint32(len(entries)))
	b = order.AppendUint32(b, uint32(len(strs)))
	flag := byte(cacheLittleEndian)
	if order == binary.BigEndian {
		flag = cacheBigEndian
	}
	b = append(b, flag, 0, 0, 0)
	b = append(b, make([]byte, 16)...) // extension_offset, unused
	for i, e := range entries {
		b = order.AppendUint32(b, uint32(e.flags))
		b = order.AppendUint32(b, offs[i][0])
		b = order.AppendUint32(b, offs[i][1])
		b = order.AppendUint32(b, 0)
		b = order.AppendUint64(b, e.hwcap)
	}
	b = append(b, strs...)
	if !old {
		return b
	}
	// The old part's entries point nowhere useful: only the new part is
	// read.
	o := append([]byte(cacheMagicOld), 0)
	o = binary.NativeEndian.AppendUint32(o, uint32(len(entries)))
	o = append(o, make([]byte, len(entries)*cacheEntryOld)...)
	for len(o)%cacheAlignNew != 0 {
		o = append(o, 0)
	}
	return append(o, b...)
}

// TestCachePaths reads stand-in loader caches: the paths of the entries
// for the name and this architecture, in the cache's order, and nothing
// from a file that is not a cache or is cut off.
func TestCachePaths(t *testing.T) {
	const (
		name  = "libcublas.so.13"
		host  = 0x0303
		other = 0x0a03
	)
	entries := []cacheEntry{
		{host, "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0},
		{other, name, "/usr/lib/aarch64-linux-gnu/" + name, 0},
		{host, name, "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/" + name, 1 << 62},
		{host, name, "/opt/cuda/lib64/" + name, 0},
		{host, name, "relative/" + name, 0},
		{host, name, "/usr/lib/x86_64-linux-gnu/" + name, 0},
	}
	want := []string{"/opt/cuda/lib64/" + name, "/usr/lib/x86_64-linux-gnu/" + name}
	newFormat := ldCache(entries, binary.LittleEndian, false)
	for _, tt := range []struct {
		name  string
		cache []byte
		want  []string
	}{
		{"new format", newFormat, want},
		{"old and new", ldCache(entries, binary.LittleEndian, true), want},
		{"big-endian", ldCache(entries, binary.BigEndian, false), want},
		{"other name", ldCache(entries[:1], binary.LittleEndian, false), nil},
		{"empty", nil, nil},
		{"not a cache", []byte("glibc-ld.so.cache2.0 and more text to fill a header"), nil},
		{"header cut off", newFormat[:cacheHeaderNew-1], nil},
		{"entries cut off", newFormat[:cacheHeaderNew+4*cacheEntryNew], nil},
		{"strings cut off", newFormat[:len(newFormat)-3], want[:1]},
		{"old part only", ldCache(entries, binary.LittleEndian, true)[:cacheHeaderOld+len(entries)*cacheEntryOld], nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseCache(tt.cache, name, host); !slices.Equal(got, tt.want) {
				t.Errorf("parseCache = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCachePathsSystem reads this machine's loader cache, where there is
// one of this architecture: it gives the C library.
func TestCachePathsSystem(t *testing.T) {
	if os.Getenv("GOCUDA_TEST_EXEC") != "" {
		t.Skip("under an emulator, the system's cache is another architecture's")
	}
	if _, err := os.Stat(ldSoCache); err != nil || cacheFlags == 0 {
		t.Skip("no loader cache for this architecture")
	}
	paths := cachePaths(ldSoCache, "libc.so.6")
	if len(paths) == 0 {
		t.Fatalf("cachePaths(%s, libc.so.6) = nil", ldSoCache)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s gives %s: %v", ldSoCache, p, err)
		}
	}
}

// TestCacheCopyBesideRelativeEntry checks that where an empty entry of
// LD_LIBRARY_PATH keeps the system loader from being asked, the paths its
// cache gives are searched in its place, after the absolute entries: a
// copy that only the cache names (ldconfig was given its directory) loads.
// (The cache was not read, and that copy was unreachable.)
func TestCacheCopyBesideRelativeEntry(t *testing.T) {
	if cacheFlags == 0 {
		t.Skip("the loader cache is not read on this architecture")
	}
	const name = "libgocudacache.so.1"
	root := t.TempDir()
	sys, cwd := filepath.Join(root, "sys"), filepath.Join(root, "cwd")
	for _, d := range []string{sys, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lib, err := standIn(sys, name)
	if err != nil {
		t.Skip(err)
	}
	place(t, lib, filepath.Join(cwd, name))
	cache := filepath.Join(root, "ld.so.cache")
	if err := os.WriteFile(cache, ldCache([]cacheEntry{{cacheFlags, name, lib, 0}}, binary.NativeEndian, false), 0o644); err != nil {
		t.Fatal(err)
	}
	savedCache, savedConf, savedDirs := ldSoCache, ldSoConf, systemLibDirs
	ldSoCache, ldSoConf, systemLibDirs = cache, filepath.Join(root, "no.conf"), nil
	t.Cleanup(func() { ldSoCache, ldSoConf, systemLibDirs = savedCache, savedConf, savedDirs })
	checkSystemCopy(t, name, lib, cwd, "the cache's")
}
