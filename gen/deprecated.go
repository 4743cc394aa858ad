package main

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Deprecation is read from the text of a declaration, as the headers spell
// it, not from what their macros expand to: gen parses the headers with
// their deprecation attributes on, but the macros say more (which function
// replaces this one) and a header may define them away for some compilers.
var (
	// reDeprecatedMacro matches a deprecation macro, with the replacement
	// it names: CUSPARSE_DEPRECATED, __CUDA_DEPRECATED,
	// CUSPARSE_DEPRECATED_REPLACE_WITH(cusparseSpMM),
	// CUSOLVER_DEPRECATED(cusolverDnXgesvd).
	reDeprecatedMacro = regexp.MustCompile(`\b(\w*DEPRECATED\w*)\b(?:\s*\(\s*(\w+)\s*\))?`)
	// reDeprecatedAttr matches the attributes themselves, with a message:
	// __attribute__((deprecated("..."))), __declspec(deprecated),
	// [[deprecated("...")]].
	reDeprecatedAttr = regexp.MustCompile(`(?:__attribute__\s*\(\(|__declspec\s*\(|\[\[)\s*deprecated\s*(?:\(\s*"((?:[^"\\]|\\.)*)"\s*\))?`)
)

// stripComments returns C text without its comments: /* */, spanning
// lines, and // up to the end of the line. Like gen's other readings of
// the headers' text, it does not tell a string literal from code.
func stripComments(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '/')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '*':
			if end := strings.Index(s[i+2:], "*/"); end >= 0 {
				s = s[i+2+end+2:]
				continue
			}
		case '/':
			if end := strings.IndexByte(s[i:], '\n'); end >= 0 {
				s = s[i+end:]
			} else {
				s = ""
			}
			continue
		}
		b.WriteByte('/')
		s = s[i+1:]
	}
}

// deprecatedKey addresses a function's deprecation in the raw doc map.
type deprecatedKey struct{ f *Func }

// deprecation returns, as a Doxygen \deprecated command, what the text of
// the declaration whose name is on line (1-based) of file says about its
// deprecation, or "" when it says nothing.
func (r *docReader) deprecation(file string, line int) string {
	lines := r.lines(file)
	if line < 1 || line > len(lines) {
		return ""
	}
	start := line - 1
	for start > 0 && continues(lines[start-1]) {
		start--
	}
	end := line - 1
	for end < len(lines)-1 && !strings.ContainsAny(stripComments(lines[end]), ";{") {
		end++
	}
	text := stripComments(strings.Join(lines[start:end+1], "\n"))
	if m := reDeprecatedAttr.FindStringSubmatch(text); m != nil {
		if m[1] != "" {
			return `\deprecated ` + strings.TrimSuffix(m[1], ".") + "."
		}
		return `\deprecated ` + filepath.Base(file) + " declares it deprecated."
	}
	if m := reDeprecatedMacro.FindStringSubmatch(text); m != nil {
		if m[2] != "" {
			return `\deprecated Use ::` + m[2] + " instead (" + filepath.Base(file) + ": " + m[1] + ")."
		}
		return `\deprecated ` + filepath.Base(file) + " declares it " + m[1] + "."
	}
	return ""
}

// bareDeprecated is the paragraph a \deprecated without text becomes.
const bareDeprecated = "Deprecated: the header's documentation marks it deprecated."

// withDeprecation returns doc, converted doc text, with dep, a converted
// Deprecated: paragraph, unless doc has one already (the Doxygen of
// cuda_runtime_api.h says \deprecated beside __CUDA_DEPRECATED) that says
// more than bareDeprecated.
func withDeprecation(doc, dep string) string {
	if dep != "" {
		doc = strings.TrimSuffix(strings.ReplaceAll(doc, bareDeprecated+"\n\n", ""), "\n\n"+bareDeprecated)
		if doc == bareDeprecated {
			doc = ""
		}
	}
	switch {
	case dep == "":
		return doc
	case doc == "":
		return dep
	case strings.HasPrefix(doc, "Deprecated:") || strings.Contains(doc, "\n\nDeprecated:"):
		return doc
	}
	return doc + "\n\n" + dep
}

// splitDeprecated returns converted doc text without its Deprecated:
// paragraphs, and those paragraphs, which go last in a Go doc comment.
func splitDeprecated(doc string) (body, dep string) {
	var b, d []string
	for _, p := range strings.Split(doc, "\n\n") {
		if strings.HasPrefix(p, "Deprecated:") {
			d = append(d, p)
		} else if p != "" {
			b = append(b, p)
		}
	}
	return strings.Join(b, "\n\n"), strings.Join(d, "\n\n")
}

// reTypeDeprecated matches a type's declarator followed by a deprecation
// macro (cusparse.h: } cusparseSolvePolicy_t CUSPARSE_DEPRECATED_TYPE;).
// A match lies within one statement and ends as a match of reDeprecatedEnd
// does, at the statement's semicolon: reDeprecatedEnd, which starts with a
// literal, finds the statements to try in a whole header fast, where
// reTypeDeprecated would take 30 ms (cuda.h).
var (
	reTypeDeprecated = regexp.MustCompile(`\b(\w+)\s+(\w*DEPRECATED\w*)\s*;`)
	reDeprecatedEnd  = regexp.MustCompile(`DEPRECATED\w*\s*;`)
)

// deprecateTypes adds a Deprecated: paragraph, converted by conv, to the
// doc of each type of the package that its header declares deprecated.
func (p *parser) deprecateTypes(conv func(string) string) {
	dep := map[string]string{} // by C name
	for _, h := range p.cfg.headers {
		text := stripComments(strings.Join(p.docs.lines(filepath.Join(p.dir, h)), "\n"))
		for _, end := range reDeprecatedEnd.FindAllStringIndex(text, -1) {
			stmt := text[strings.LastIndexByte(text[:end[0]], ';')+1 : end[1]]
			if m := reTypeDeprecated.FindStringSubmatch(stmt); m != nil {
				dep[m[1]] = conv(`\deprecated ` + filepath.Base(h) + " declares it " + m[2] + ".")
			}
		}
	}
	for _, t := range p.pkg.Typedefs {
		t.Doc = withDeprecation(t.Doc, dep[t.CName])
	}
	for _, e := range p.pkg.Enums {
		e.Doc = withDeprecation(e.Doc, dep[e.CName])
	}
	for _, r := range p.pkg.Records {
		r.Doc = withDeprecation(r.Doc, dep[r.CName])
	}
}
