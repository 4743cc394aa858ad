package dl

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
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
	switch v, why := inspect(path); v {
	case foreign, bad:
		return why
	}
	return ""
}

// verdict is what the loader does with a file it finds where it looks for
// a library.
type verdict int

const (
	absent     verdict = iota // there is no file: it looks on
	unreadable                // it cannot open the file (EACCES): it looks on
	foreign                   // an ELF file of another class or machine: it looks on
	bad                       // it fails on the file, blocks (a named pipe) or dies (truncated)
	sound                     // it takes the file
)

// inspect returns what the loader does with the file at path and, unless
// it is absent or sound, why. It never blocks: the file's type is checked
// before it is opened, and it is opened without waiting for a writer, in
// case a named pipe took its place in between.
func inspect(path string) (verdict, string) {
	info, err := os.Stat(path)
	if err != nil {
		return absent, ""
	}
	if !info.Mode().IsRegular() {
		return bad, "not a regular file (" + fileKind(info.Mode()) + ")"
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return unreadable, "cannot be read: permission denied"
		}
		return absent, ""
	}
	defer f.Close()
	if info, err = f.Stat(); err != nil {
		return absent, ""
	}
	if !info.Mode().IsRegular() {
		return bad, "not a regular file (" + fileKind(info.Mode()) + ")"
	}
	return checkELF(f, info.Size())
}

// checkELF is inspect for the size bytes of r, a regular file.
func checkELF(r io.ReaderAt, size int64) (verdict, string) {
	var ident [elf.EI_NIDENT]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil || string(ident[:4]) != elf.ELFMAG {
		return bad, "not an ELF file"
	}
	class := elf.Class(ident[elf.EI_CLASS])
	var order binary.ByteOrder
	switch elf.Data(ident[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		order = binary.BigEndian
	default:
		return bad, "not an ELF file: unknown byte order"
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
			return bad, "truncated: no whole ELF header"
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
			return bad, "truncated: no whole ELF header"
		}
		typ, machine = elf.Type(h.Type), elf.Machine(h.Machine)
		phoff, phnum, phentsize = int64(h.Phoff), int(h.Phnum), int(h.Phentsize)
		readProg = func(off int64) (elf.ProgType, uint64, uint64, error) {
			var p elf.Prog32
			err := binary.Read(io.NewSectionReader(r, off, size-off), order, &p)
			return elf.ProgType(p.Type), uint64(p.Off), uint64(p.Filesz), err
		}
	default:
		return bad, "not an ELF file: unknown class"
	}
	host, known := hostMachines[runtime.GOARCH]
	if class != hostClass || known && machine != host {
		want := hostClass.String()
		if known {
			want += " " + host.String()
		}
		return foreign, fmt.Sprintf("built for %v %v, and this process is %s", class, machine, want)
	}
	if typ != elf.ET_DYN {
		return bad, fmt.Sprintf("an ELF file of type %v, not a shared object", typ)
	}
	for i := range phnum {
		off := phoff + int64(i*phentsize)
		if off < 0 || off >= size {
			return bad, fmt.Sprintf("truncated: %d bytes, and its program headers end past them", size)
		}
		pt, poff, filesz, err := readProg(off)
		if err != nil {
			return bad, fmt.Sprintf("truncated: %d bytes, and its program headers end past them", size)
		}
		if pt == elf.PT_LOAD && (poff > uint64(size) || filesz > uint64(size)-poff) {
			return bad, fmt.Sprintf("truncated: %d bytes, and a loadable segment ends at byte %d", size, poff+filesz)
		}
	}
	return sound, ""
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

// DependencyError reports that a library needs (DT_NEEDED) another that
// the loader would open from the library's own directories, where the file
// it would open must not be given to it: not a regular file (the loader
// blocks opening a named pipe for ever), truncated (the process would die
// of SIGBUS), unreadable, or not a shared object of this process. Those
// directories are the entries of the library's DT_RUNPATH or, where it has
// none, of its DT_RPATH and of the DT_RPATH of the libraries that need it,
// $ORIGIN expanded: NVIDIA's libraries find the libraries they need beside
// them through a DT_RUNPATH of $ORIGIN. errors.Is matches it to
// ErrBadDependency.
type DependencyError struct {
	Library string // the library that needs it
	Name    string // the name it needs it by, such as libcublasLt.so.13
	Path    string // the file the loader would open for it
	Reason  string // what is wrong with the file
}

// ErrBadDependency is what errors.Is matches a *DependencyError to, and so a
// *LibraryError whose library, or a library it needs, was refused for one.
var ErrBadDependency = errors.New("a dependency of the library is broken where the loader would open it")

func (e *DependencyError) Error() string {
	return e.Library + " " + e.needs()
}

// needs is Error's text without the library that needs the file.
func (e *DependencyError) needs() string {
	return fmt.Sprintf("needs %s, and the loader would open %s: %s", e.Name, e.Path, e.Reason)
}

// Is reports whether target is ErrBadDependency.
func (e *DependencyError) Is(target error) bool { return target == ErrBadDependency }

// openNeeded opens, by absolute path, the libraries that the library at
// path needs (DT_NEEDED), theirs first, so that the loader, opening path,
// finds them open rather than search for them where an empty or relative
// entry of $LD_LIBRARY_PATH makes it search the working directory:
// cuda-pathfinder does the same. A dependency that sits beside the library
// is opened from there. One that does not is looked for as the loader
// looks for it (see loaderDirs): where the library's own directories (its
// DT_RUNPATH or DT_RPATH) come first with a file of its name, that file is
// opened, and where such an entry of $LD_LIBRARY_PATH does, with no library
// of that name open yet, the first usable file where the loader would look
// after that entry, the working directory left out. The other dependencies
// are left to the loader. Each file to open is checked first, as checkFile
// checks a library, and its own dependencies in turn; openNeeded returns
// why path must not be given to the loader, opening nothing: a
// *DependencyError where the loader would open a file from the library's
// own directories that inspect finds bad or unreadable, or a dependency
// that the loader would take from the working directory and that is found
// nowhere else.
func openNeeded(path string) error {
	p := neededPlan{planned: map[string]bool{}, walked: map[string]bool{}}
	if err := p.walk(path, nil, 0); err != nil {
		return err
	}
	for _, f := range p.open {
		dlopen(f)
	}
	return nil
}

// neededPlan is openNeeded's plan: the dependencies to open, found and
// checked before any is opened.
type neededPlan struct {
	open    []string        // the files to open, in order
	planned map[string]bool // the names of those files
	walked  map[string]bool // the libraries whose dependencies are planned
	loaded  map[string]bool // loadedNames, once needed
}

// walk plans the opening of the dependencies of the library at path,
// depth libraries down from the one openNeeded opens, whose DT_RPATH
// entries, and those of the libraries that need it, are inherited, nearest
// first: the loader searches them after path's own where path has no
// DT_RUNPATH.
func (p *neededPlan) walk(path string, inherited []string, depth int) error {
	if depth > 8 || p.walked[path] {
		return nil
	}
	p.walked[path] = true
	needed, rpath, runpath := dynamic(path)
	origin := filepath.Dir(path)
	theirs := slices.Concat(expandOrigin(rpath, origin), inherited)
	var dirs []searchDir
	if len(runpath) == 0 {
		dirs = loaderDirs(theirs, nil)
	} else {
		dirs = loaderDirs(nil, expandOrigin(runpath, origin))
	}
	for _, n := range needed {
		if strings.Contains(n, "/") {
			continue
		}
		if dep := filepath.Join(origin, n); usable(dep) {
			if err := p.walk(dep, theirs, depth+1); err != nil {
				return err
			}
			p.plan(dep, n)
			continue
		}
		if !p.concerns(dirs, n) {
			continue
		}
		for _, d := range dirs {
			file := filepath.Join(d.dir, n)
			if !filepath.IsAbs(d.dir) {
				// The loader would take the working directory's file.
				if _, err := os.Stat(file); err != nil {
					continue
				}
				dep, ok := resolveNeeded(dirs, n)
				if !ok {
					return fmt.Errorf("needs %s, which $LD_LIBRARY_PATH's relative entry %q would make the loader take from the working directory, and which is found nowhere else", n, d.dir)
				}
				if err := p.walk(dep, theirs, depth+1); err != nil {
					return err
				}
				p.plan(dep, n)
				break
			}
			v, why := inspect(file)
			if v == absent || v == foreign || v == unreadable && !d.own {
				continue // the loader looks on
			}
			if !d.own {
				break // the file is the system's, or the user's
			}
			if v != sound {
				return &DependencyError{Library: path, Name: n, Path: file, Reason: why}
			}
			if err := p.walk(file, theirs, depth+1); err != nil {
				return err
			}
			p.plan(file, n)
			break
		}
	}
	return nil
}

// dynamic returns the DT_NEEDED, DT_RPATH and DT_RUNPATH entries of the
// ELF file at path, or nil where it cannot read them. It does not block on
// a named pipe put in the file's place since it was inspected.
func dynamic(path string) (needed, rpath, runpath []string) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, nil, nil
	}
	e, err := elf.NewFile(f)
	if err != nil {
		return nil, nil, nil
	}
	needed, _ = e.DynString(elf.DT_NEEDED)
	rpath, _ = e.DynString(elf.DT_RPATH)
	runpath, _ = e.DynString(elf.DT_RUNPATH)
	return needed, rpath, runpath
}

// concerns reports whether the loader, looking for the library name in
// dirs, could open a file of the library's own directories or of the
// working directory: one of those holds a file of that name, and no
// library of that name is open or planned.
func (p *neededPlan) concerns(dirs []searchDir, name string) bool {
	held := false
	for _, d := range dirs {
		if d.own || !filepath.IsAbs(d.dir) {
			if _, err := os.Lstat(filepath.Join(d.dir, name)); err == nil {
				held = true
				break
			}
		}
	}
	if !held || p.planned[name] {
		return false
	}
	if p.loaded == nil {
		p.loaded = loadedNames()
	}
	return !p.loaded[name]
}

// plan adds the file at path, needed as name, to the files to open.
func (p *neededPlan) plan(path, name string) {
	if !slices.Contains(p.open, path) {
		p.open = append(p.open, path)
	}
	p.planned[name] = true
}

// usable reports whether the file at path is one the loader takes.
func usable(path string) bool {
	v, _ := inspect(path)
	return v == sound
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

// expandOrigin returns the absolute directories that the entries of a
// library's DT_RPATH or DT_RUNPATH list name, $ORIGIN (or ${ORIGIN})
// replaced by origin, the library's directory.
func expandOrigin(list []string, origin string) []string {
	var dirs []string
	for _, l := range list {
		for _, d := range strings.Split(l, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if filepath.IsAbs(d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// searchDir is a directory where the loader looks for a library's
// dependency.
type searchDir struct {
	dir string // an entry of $LD_LIBRARY_PATH may be relative: "" is the working directory
	own bool   // from the DT_RPATH or DT_RUNPATH of the library, or of one that needs it
}

// loaderDirs returns the directories where the loader looks for a
// dependency of a library, in its order, before its cache: rpath, the
// library's DT_RPATH entries and then those of the libraries that need it
// (nil where it has a DT_RUNPATH), the entries of $LD_LIBRARY_PATH, then
// runpath, its DT_RUNPATH entries; rpath and runpath expanded by
// expandOrigin.
func loaderDirs(rpath, runpath []string) []searchDir {
	var dirs []searchDir
	for _, d := range rpath {
		dirs = append(dirs, searchDir{dir: d, own: true})
	}
	for _, e := range ldLibraryPath() {
		dirs = append(dirs, searchDir{dir: e})
	}
	for _, d := range runpath {
		dirs = append(dirs, searchDir{dir: d, own: true})
	}
	return dirs
}

// resolveNeeded returns the first usable file named name where the loader
// looks for a dependency, dirs (see loaderDirs) and then its cache,
// configuration and trusted directories, after the relative entries of
// $LD_LIBRARY_PATH are left out.
func resolveNeeded(dirs []searchDir, name string) (string, bool) {
	var files []string
	for _, d := range dirs {
		if filepath.IsAbs(d.dir) {
			files = append(files, filepath.Join(d.dir, name))
		}
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
