package dl

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// hostMachines is the ELF machine of each GOARCH the bindings run on.
var hostMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"386":     elf.EM_386,
	"arm":     elf.EM_ARM,
	"ppc64le": elf.EM_PPC64,
	"riscv64": elf.EM_RISCV,
	"s390x":   elf.EM_S390,
	"loong64": elf.EM_LOONGARCH,
}

// checkFile returns why the file at path cannot be a shared library of this
// process, or "" when the loader may try it (also when it cannot be read:
// the loader then says why). The loader must not see a file that is not a
// regular one (it blocks opening a named pipe for ever), nor a truncated
// library: it maps the segments past the end of the file, and the process
// dies of SIGBUS when it touches them. A library of another class or
// machine gets a reason that names both, where the loader's message says
// "No such file or directory".
func checkFile(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return ""
	}
	if !info.Mode().IsRegular() {
		return "not a regular file (" + fileKind(info.Mode()) + ")"
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return checkELF(f, info.Size())
}

// checkELF is checkFile for the size bytes of r, a regular file.
func checkELF(r io.ReaderAt, size int64) string {
	var ident [elf.EI_NIDENT]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil || string(ident[:4]) != elf.ELFMAG {
		return "not an ELF file"
	}
	class := elf.Class(ident[elf.EI_CLASS])
	var order binary.ByteOrder
	switch elf.Data(ident[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		order = binary.BigEndian
	default:
		return "not an ELF file: unknown byte order"
	}
	hostClass := elf.ELFCLASS64
	if unsafe.Sizeof(uintptr(0)) == 4 {
		hostClass = elf.ELFCLASS32
	}
	var (
		typ              elf.Type
		machine          elf.Machine
		phoff            int64
		phnum, phentsize int
		readProg         func(off int64) (elf.ProgType, uint64, uint64, error)
	)
	sr := io.NewSectionReader(r, 0, size)
	switch class {
	case elf.ELFCLASS64:
		var h elf.Header64
		if err := binary.Read(sr, order, &h); err != nil {
			return "truncated: no whole ELF header"
		}
		typ, machine = elf.Type(h.Type), elf.Machine(h.Machine)
		phoff, phnum, phentsize = int64(h.Phoff), int(h.Phnum), int(h.Phentsize)
		readProg = func(off int64) (elf.ProgType, uint64, uint64, error) {
			var p elf.Prog64
			err := binary.Read(io.NewSectionReader(r, off, size-off), order, &p)
			return elf.ProgType(p.Type), p.Off, p.Filesz, err
		}
	case elf.ELFCLASS32:
		var h elf.Header32
		if err := binary.Read(sr, order, &h); err != nil {
			return "truncated: no whole ELF header"
		}
		typ, machine = elf.Type(h.Type), elf.Machine(h.Machine)
		phoff, phnum, phentsize = int64(h.Phoff), int(h.Phnum), int(h.Phentsize)
		readProg = func(off int64) (elf.ProgType, uint64, uint64, error) {
			var p elf.Prog32
			err := binary.Read(io.NewSectionReader(r, off, size-off), order, &p)
			return elf.ProgType(p.Type), uint64(p.Off), uint64(p.Filesz), err
		}
	default:
		return "not an ELF file: unknown class"
	}
	host, known := hostMachines[runtime.GOARCH]
	if class != hostClass || known && machine != host {
		want := hostClass.String()
		if known {
			want += " " + host.String()
		}
		return fmt.Sprintf("built for %v %v, and this process is %s", class, machine, want)
	}
	if typ != elf.ET_DYN {
		return fmt.Sprintf("an ELF file of type %v, not a shared object", typ)
	}
	for i := range phnum {
		off := phoff + int64(i*phentsize)
		if off < 0 || off >= size {
			return fmt.Sprintf("truncated: %d bytes, and its program headers end past them", size)
		}
		pt, poff, filesz, err := readProg(off)
		if err != nil {
			return fmt.Sprintf("truncated: %d bytes, and its program headers end past them", size)
		}
		if pt == elf.PT_LOAD && (poff > uint64(size) || filesz > uint64(size)-poff) {
			return fmt.Sprintf("truncated: %d bytes, and a loadable segment ends at byte %d", size, poff+filesz)
		}
	}
	return ""
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// openNeeded opens, by absolute path, the libraries that the library at
// path needs (DT_NEEDED), theirs first, so that the loader, opening path,
// finds them open rather than search for them where an empty or relative
// entry of $LD_LIBRARY_PATH makes it search the working directory:
// cuda-pathfinder does the same. A dependency that sits beside the library
// is opened from there. One that does not, where such an entry holds a
// file of its name and no library of that name is open yet, is looked for
// where the loader would look after that entry, the working directory
// left out: the library's DT_RPATH (where it has no DT_RUNPATH), the
// absolute entries of $LD_LIBRARY_PATH, its DT_RUNPATH, the loader's cache,
// configuration and trusted directories. openNeeded returns why path must
// not be given to the loader: such a dependency found nowhere else, which
// the loader would take from the working directory. The other
// dependencies are left to the loader.
func openNeeded(path string, depth int) string {
	if depth > 8 {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	needed, _ := f.DynString(elf.DT_NEEDED)
	rpath, _ := f.DynString(elf.DT_RPATH)
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	f.Close()
	var loaded map[string]bool // the names of the libraries open, once needed
	for _, n := range needed {
		if strings.Contains(n, "/") {
			continue
		}
		dep := filepath.Join(filepath.Dir(path), n)
		if usable(dep) {
			if why := openNeeded(dep, depth+1); why != "" {
				return why
			}
			dlopen(dep)
			continue
		}
		entry, ok := relativeHolder(n)
		if !ok {
			continue
		}
		if loaded == nil {
			loaded = loadedNames()
		}
		if loaded[n] {
			continue
		}
		dep, ok = resolveNeeded(path, n, rpath, runpath)
		if !ok {
			return fmt.Sprintf("needs %s, which $LD_LIBRARY_PATH's relative entry %q would make the loader take from the working directory, and which is found nowhere else", n, entry)
		}
		if why := openNeeded(dep, depth+1); why != "" {
			return why
		}
		dlopen(dep)
		loaded[n] = true
	}
	return ""
}

// usable reports whether the file at path exists and passes checkFile.
func usable(path string) bool {
	_, err := os.Stat(path)
	return err == nil && checkFile(path) == ""
}

// ldLibraryPath returns the entries of $LD_LIBRARY_PATH, split as the
// loader splits them (at ':' and ';'), or nil where it is unset or empty.
func ldLibraryPath() []string {
	ldpath := os.Getenv("LD_LIBRARY_PATH")
	if ldpath == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(ldpath, ";", ":"), ":")
}

// relativeHolder returns the first relative entry of $LD_LIBRARY_PATH (""
// is the working directory) that holds a file named name.
func relativeHolder(name string) (string, bool) {
	for _, e := range ldLibraryPath() {
		if filepath.IsAbs(e) {
			continue
		}
		if _, err := os.Stat(filepath.Join(e, name)); err == nil {
			return e, true
		}
	}
	return "", false
}

// resolveNeeded returns the first usable file named name where the loader
// looks for a dependency of the library at path, whose DT_RPATH and
// DT_RUNPATH are rpath and runpath, after $LD_LIBRARY_PATH's relative
// entries are left out.
func resolveNeeded(path, name string, rpath, runpath []string) (string, bool) {
	origin := filepath.Dir(path)
	var dirs []string
	expand := func(list []string) {
		for _, l := range list {
			for _, d := range strings.Split(l, ":") {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	if len(runpath) == 0 {
		expand(rpath)
	}
	for _, e := range ldLibraryPath() {
		if filepath.IsAbs(e) {
			dirs = append(dirs, e)
		}
	}
	expand(runpath)
	var files []string
	for _, d := range dirs {
		files = append(files, filepath.Join(d, name))
	}
	files = append(files, cachePaths(ldSoCache, name)...)
	for _, d := range append(confDirs(ldSoConf, 0), systemLibDirs...) {
		files = append(files, filepath.Join(d, name))
	}
	for _, f := range files {
		if usable(f) {
			return f, true
		}
	}
	return "", false
}
