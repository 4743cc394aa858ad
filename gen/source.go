package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"modernc.org/cc/v4"
)

// The C front end recurses without a bound: through #include, where a
// header that includes itself without a guard grows its memory until the
// machine has none, and through the grammar, where 100,000 nested
// parentheses overflow gen's stack. It has no options to stop either, so
// gen stops both itself, with an error naming the file and line: it reads
// every file the front end reads (sources, its fs.FS), refusing one that
// nests deeper than maxNesting, and marks each #include and each file's
// end with a pragma it handles, counting the #include levels.
const (
	// maxIncludeDepth is how deep #include nests, as GCC allows.
	maxIncludeDepth = 200
	// maxNesting is how deep brackets ((, [ and {) and prefix operators
	// (- + ! ~ * &, sizeof and its kin) nest in one declaration or one
	// directive, as clang's -fbracket-depth limits brackets. It counts a
	// bracket and the prefix operators before it, which the front end
	// holds on its stack until the bracket closes.
	maxNesting = 256
	// sourcePragma names the pragma that marks an #include line (#pragma
	// gocuda_gen_source include LINE) and a file's end (#pragma
	// gocuda_gen_source end).
	sourcePragma = "gocuda_gen_source"
)

// sources is the file system through which the C front end reads the
// files of one translation, and the handler of its pragmas (see
// maxIncludeDepth). It is safe for concurrent use.
type sources struct {
	mu    sync.Mutex
	err   error        // the first limit passed
	read  []*scanned   // the files read, in order
	stack []includedAt // the #include lines being included, outermost first
	// last is the last file read directly for the input (not through a
	// file's #include) that ended.
	last string
}

// includedAt is an #include line.
type includedAt struct {
	file string
	line int
}

// String returns "file:line".
func (a includedAt) String() string { return a.file + ":" + strconv.Itoa(a.line) }

// translate parses src, a list of #include lines, with the configuration's
// predefined macros, within the limits of maxIncludeDepth and maxNesting.
// Where the input ends inside a declaration, which the front end reports
// at no position ("-: unexpected EOF"), the error's first line names where
// it ends: the end of a file that leaves a bracket open, or else of the
// input's last header.
func translate(cfg *cc.Config, src string) (*cc.AST, error) {
	s := new(sources)
	c := *cfg
	c.FS = s
	c.PragmaHandler = s.pragma
	ast, err := cc.Translate(&c, []cc.Source{
		{Name: "<predefined>", Value: cfg.Predefined},
		{Name: "<builtin>", Value: cc.Builtin},
		{Name: "<input>", Value: src},
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if err != nil {
		return nil, s.locate(err)
	}
	return ast, nil
}

// Open opens the file name for the front end, which reads it as gen
// prepares it (see sources.prepare).
func (s *sources) Open(name string) (fs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &sourceFile{File: f, s: s}, nil
}

// sourceFile is a file that the front end opened through sources: it
// reads it whole at its first Read, and reads what sources.prepare makes
// of it.
type sourceFile struct {
	*os.File
	s *sources
	r io.Reader // nil before the first Read
}

// Read reads the file as sources.prepare makes it.
func (f *sourceFile) Read(p []byte) (int, error) {
	if f.r == nil {
		b, err := io.ReadAll(f.File)
		if err != nil {
			return 0, err
		}
		f.r = bytes.NewReader(f.s.prepare(f.Name(), b))
	}
	return f.r.Read(p)
}

// prepare returns the contents b of the file name as the front end reads
// them: with each #include line after a pragma that gives its line, and a
// #line directive that keeps the lines' numbers, and a pragma at the end.
// A file that nests deeper than maxNesting is read as empty, and the
// translation fails.
func (s *sources) prepare(name string, b []byte) []byte {
	sc := scan(b)
	sc.name = name
	s.mu.Lock()
	s.read = append(s.read, sc)
	if sc.deep > 0 && s.err == nil {
		s.err = fmt.Errorf("%s:%d: brackets and prefix operators nested more than %d deep: gen parses no deeper, as clang's -fbracket-depth", name, sc.deep, maxNesting)
	}
	failed := s.err != nil
	s.mu.Unlock()
	end := "\n#pragma " + sourcePragma + " end\n"
	if failed {
		return []byte(end)
	}
	var out bytes.Buffer
	out.Grow(len(b) + len(sc.includes)*64 + len(end) + 1)
	at := 0
	for _, inc := range sc.includes {
		out.Write(b[at:inc.offset])
		fmt.Fprintf(&out, "#pragma %s include %d\n#line %d\n", sourcePragma, inc.hash, inc.line)
		at = inc.offset
	}
	out.Write(b[at:])
	if len(b) > 0 && b[len(b)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.WriteString(end)
	return out.Bytes()
}

// pragma handles the pragmas of prepare, and leaves the others alone.
func (s *sources) pragma(toks []cc.Token) error {
	if len(toks) < 2 || toks[0].SrcStr() != sourcePragma {
		return nil
	}
	file := toks[0].Position().Filename
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		// Leave each file as its next #include comes: the translation
		// has failed.
		return cc.SkipSource
	}
	switch toks[1].SrcStr() {
	case "include":
		line := 0
		if len(toks) > 2 {
			line, _ = strconv.Atoi(toks[2].SrcStr())
		}
		at := includedAt{file, line}
		if len(s.stack) < maxIncludeDepth {
			s.stack = append(s.stack, at)
			return nil
		}
		s.err = fmt.Errorf("%s: #include nested more than %d levels deep (GCC's limit)", at, maxIncludeDepth)
		for i := len(s.stack) - 1; i >= 0; i-- {
			if s.stack[i].file == file {
				var cycle []string
				for _, a := range s.stack[i:] {
					cycle = append(cycle, a.String())
				}
				cycle = append(cycle, at.String())
				s.err = fmt.Errorf("%w: the headers include one another in a cycle, %s; is an include guard missing?", s.err, strings.Join(cycle, " -> "))
				break
			}
		}
		return cc.SkipSource
	case "end":
		if len(s.stack) == 0 {
			s.last = file
		} else {
			s.stack = s.stack[:len(s.stack)-1]
		}
	}
	return nil
}

// locate returns err, the front end's, with a first line that names where
// the input ends inside a declaration, where err's first line names no
// position ("-: unexpected EOF"): the end of the last file read that
// leaves a bracket open, or else that of the input's last header. Any
// other err it returns as it is.
func (s *sources) locate(err error) error {
	if !strings.HasPrefix(err.Error(), "-: ") {
		return err
	}
	for i := len(s.read) - 1; i >= 0; i-- {
		if f := s.read[i]; f.open > 0 {
			return fmt.Errorf("%s:%d: unexpected end of input: the %c of line %d is not closed; is the file cut off?\n%w", f.name, f.lines, f.bracket, f.open, err)
		}
	}
	for _, f := range s.read {
		if f.name == s.last {
			return fmt.Errorf("%s:%d: unexpected end of input inside a declaration, at the end of the input's last header; is a header cut off?\n%w", f.name, f.lines, err)
		}
	}
	return err
}

// scanned is what scan finds in a file.
type scanned struct {
	name     string
	lines    int       // its lines, the last one unended included
	includes []include // its #include and #include_next lines
	deep     int       // the line where nesting passes maxNesting, or 0
	// open is the line of the outermost bracket of its declarations (not
	// of its directives) that it leaves open, or 0, and bracket that
	// bracket.
	open    int
	bracket byte
}

// include is an #include line.
type include struct {
	offset int // where its logical line starts, in bytes
	line   int // the line that starts there
	hash   int // the line of its #
}

// prefixWords are the words that are prefix operators in C's expressions,
// as the front end parses them.
var prefixWords = map[string]bool{
	"sizeof": true, "_Alignof": true, "alignof": true, "__alignof": true, "__alignof__": true,
	"__extension__": true, "__real": true, "__real__": true, "__imag": true, "__imag__": true,
}

// nesting counts how deep brackets and prefix operators nest, in the
// declarations of a file or in one directive: each open bracket holds the
// prefix operators right before it, and itself.
type nesting struct {
	open  []int // the prefix operators and bracket each open bracket holds
	lines []int // and the line of each
	brs   []byte
	total int // the sum of open
	run   int // prefix operators since the last other token
}

// push opens a bracket on line and reports whether the nesting stays
// within maxNesting.
func (n *nesting) push(br byte, line int) bool {
	n.open = append(n.open, n.run+1)
	n.lines = append(n.lines, line)
	n.brs = append(n.brs, br)
	n.total += n.run + 1
	n.run = 0
	return n.total <= maxNesting
}

// pop closes a bracket. A bracket that closes none (one a macro opened) is
// none of its business.
func (n *nesting) pop() {
	n.run = 0
	if k := len(n.open); k > 0 {
		n.total -= n.open[k-1]
		n.open, n.lines, n.brs = n.open[:k-1], n.lines[:k-1], n.brs[:k-1]
	}
}

// prefix counts a prefix operator and reports whether the nesting stays
// within maxNesting.
func (n *nesting) prefix() bool {
	n.run++
	return n.total+n.run <= maxNesting
}

// scan finds a file's #include lines and how deep it nests, in one pass
// over its bytes, as C's translation phases 1 to 3 see them: lines
// spliced by a backslash, comments, string and character literals,
// directives. It keeps to what the limits need: it knows no macros and
// no conditionals.
func scan(b []byte) *scanned {
	sc := &scanned{lines: bytes.Count(b, []byte{'\n'})}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		sc.lines++
	}
	// The nesting of the declarations, of the directive of the line and,
	// for a directive that is no expression (#error, #pragma), none.
	var text, dir, none nesting
	line := 1
	lineStart, lineStartLine := 0, 1 // where the logical line starts
	atStart := true                  // nothing but blanks since it started
	inDir, dirCounts := false, false
	// splice skips a backslash and its newline at i, if there is one, and
	// reports whether it did.
	splice := func(i *int) bool {
		j := *i + 1
		if j < len(b) && b[j] == '\r' {
			j++
		}
		if b[*i] == '\\' && j < len(b) && b[j] == '\n' {
			*i = j + 1
			line++
			return true
		}
		return false
	}
	for i := 0; i < len(b); {
		n := &text
		switch {
		case inDir && dirCounts:
			n = &dir
		case inDir:
			n = &none
		}
		c := b[i]
		switch {
		case c == '\\' && splice(&i):
			continue
		case c == '\n':
			i++
			line++
			inDir, atStart = false, true
			lineStart, lineStartLine = i, line
			dir, none = nesting{}, nesting{}
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			for i += 2; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] == '\n' {
					line++
				}
			}
			i += 2
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i += 2; i < len(b) && b[i] != '\n'; {
				if !(b[i] == '\\' && splice(&i)) {
					i++
				}
			}
			continue
		}
		was := atStart
		atStart = false
		switch {
		case c == '#' && was:
			inDir = true
			i++
			for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
				i++
			}
			j := i
			for j < len(b) && isIdent(b[j]) {
				j++
			}
			w := string(b[i:j])
			if w == "include" || w == "include_next" {
				sc.includes = append(sc.includes, include{offset: lineStart, line: lineStartLine, hash: line})
			}
			// The directives whose words the front end parses as C.
			dirCounts = w == "if" || w == "elif" || w == "define"
			i = j
		case c == '"' || c == '\'':
			for i++; i < len(b) && b[i] != c && b[i] != '\n'; {
				switch {
				case b[i] == '\\' && splice(&i):
				case b[i] == '\\':
					i += 2
				default:
					i++
				}
			}
			i++
			n.run = 0
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9':
			// A preprocessing number: 1e+5, 0x1p-3, 1'000.
		number:
			for i++; i < len(b); {
				switch d := b[i]; {
				case isIdent(d) || d == '.':
					i++
				case (d == '+' || d == '-') && strings.IndexByte("eEpP", b[i-1]) >= 0:
					i++
				case d == '\'' && i+1 < len(b) && isIdent(b[i+1]):
					i += 2
				case d == '\\' && splice(&i):
				default:
					break number
				}
			}
			n.run = 0
		case isIdent(c):
			j := i
			for j < len(b) && isIdent(b[j]) {
				j++
			}
			word := b[i:j]
			i = j
			if !prefixWords[string(word)] {
				n.run = 0
			} else if !n.prefix() && n != &none {
				sc.deep = line
				return sc
			}
		case c == '(' || c == '[' || c == '{':
			i++
			if !n.push(c, line) && n != &none {
				sc.deep = line
				return sc
			}
		case c == ')' || c == ']' || c == '}':
			i++
			n.pop()
		case strings.IndexByte("-+!~*&", c) >= 0:
			i++
			if !n.prefix() && n != &none {
				sc.deep = line
				return sc
			}
		default:
			i++
			n.run = 0
		}
	}
	if len(text.open) > 0 {
		sc.open, sc.bracket = text.lines[0], text.brs[0]
	}
	return sc
}

// isIdent reports whether c may be in an identifier.
func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
