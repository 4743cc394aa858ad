package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempSuffix ends the names of writeFiles's temporaries, which are
// .NAME.PID-N.gentmp beside the file NAME they will become: a name that
// starts with a dot, which Go's tools ignore, and that says whose it is.
const tempSuffix = ".gentmp"

// writeFiles writes files, by path relative to dir, all or none: each to
// a temporary file beside its path, and, once every one is written and
// closed, each temporary renamed over its path, so that a file is there
// whole or not at all. It refuses a path that is a directory or another
// file that is not a regular one before it writes anything; where a write
// fails (a full disk, a file size limit: gen ignores SIGXFSZ, so the write
// returns EFBIG), it removes the temporaries and changes no file. A run
// killed before the renames leaves temporaries, which the next run
// removes from the directories it writes in. A file keeps the permissions
// it had; a new one gets 0644, less the umask.
func writeFiles(dir string, files map[string][]byte) (err error) {
	names := sortedKeys(files)
	paths := make([]string, len(names))
	perms := make([]fs.FileMode, len(names)) // of the files there, 0 for new ones
	for i, name := range names {
		paths[i] = filepath.Join(dir, name)
		fi, err := os.Lstat(paths[i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.IsDir():
			return fmt.Errorf("%s is a directory: gen writes a file there", paths[i])
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s): gen writes a file there", paths[i], fi.Mode().Type())
		default:
			perms[i] = fi.Mode().Perm()
		}
	}
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	cleaned := map[string]bool{}
	for i, name := range names {
		d := filepath.Dir(paths[i])
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if !cleaned[d] {
			cleaned[d] = true
			removeStale(d)
		}
		tmp, err := writeTemp(paths[i], files[name], perms[i])
		if tmp != "" {
			temps = append(temps, tmp)
		}
		if err != nil {
			return err
		}
	}
	for i, tmp := range temps {
		if err := os.Rename(tmp, paths[i]); err != nil {
			return fmt.Errorf("writing %s: %w (the files before it are written, it and those after it keep their old contents)", paths[i], errors.Unwrap(err))
		}
	}
	return nil
}

// writeTemp writes b to a new temporary file beside path, with the
// permissions perm (0: 0644, less the umask), and returns its name, also
// where it fails after making it.
func writeTemp(path string, b []byte, perm fs.FileMode) (string, error) {
	dir, base := filepath.Split(path)
	var f *os.File
	var tmp string
	for n := 0; ; n++ {
		tmp = filepath.Join(dir, "."+base+"."+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(n)+tempSuffix)
		var err error
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
	}
	var err error
	if perm != 0 {
		err = f.Chmod(perm)
	}
	if _, werr := f.Write(b); err == nil {
		err = werr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The error names the temporary: name the file.
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return tmp, fmt.Errorf("writing %s: %w", path, err)
	}
	return tmp, nil
}

// removeStale removes the temporaries of writeFiles in dir that a run no
// longer running left: where gen was killed before it renamed them.
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutSuffix(name, tempSuffix)
		if !ok || !strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		// .NAME.PID-N: the process that made it.
		rest = rest[strings.LastIndexByte(rest, '.')+1:]
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, name))
		}
	}
}
