package main

import (
	"os"
	"regexp"
	"strings"
)

// docReader finds the comment that documents a declaration in the header's
// text, by line.
type docReader struct {
	files map[string][]string
}

func (r *docReader) lines(file string) []string {
	if l, ok := r.files[file]; ok {
		return l
	}
	b, err := os.ReadFile(file)
	if err != nil {
		r.files[file] = nil
		return nil
	}
	l := strings.Split(string(b), "\n")
	r.files[file] = l
	return l
}

// before returns the comment that documents the declaration on line
// (1-based): a /** */ or /*! */ comment that ends above it, or a plain /* */
// or // comment that ends right above it, with no blank line between (NCCL
// documents its functions so; see plainDoc). With cont, the lines between
// may continue the declaration (a function whose return type is on the line
// above its name), and an #if/#else pair that declares the same function
// twice is stepped over.
func (r *docReader) before(file string, line int, cont bool) string {
	lines := r.lines(file)
	i := line - 2
	if line >= 1 && line <= len(lines) && strings.HasPrefix(strings.TrimSpace(lines[line-1]), "}") {
		// The name of a type defined in a typedef follows its body
		// (} ncclResult_t;): the comment is above the typedef.
		depth := 0
		for k := line - 1; k >= 0; k-- {
			depth += strings.Count(lines[k], "}") - strings.Count(lines[k], "{")
			if depth <= 0 {
				i = k - 1
				break
			}
		}
	}
	if cont {
		// The declaration may start on an earlier line.
		for i >= 0 && continues(lines[i]) {
			i--
		}
	}
	if cont {
		i = skipAliases(lines, i)
	}
	adjacent := true // no blank line or directive between
	for ; i >= 0; i-- {
		s := strings.TrimSpace(lines[i])
		switch {
		case s == "":
			adjacent = false
			continue
		case strings.HasSuffix(s, "*/"):
			c := comment(lines, i, adjacent)
			if c != "" && !doxygenComment(c) && heading(lines, i+1) {
				return ""
			}
			return c
		case strings.HasPrefix(s, "//"):
			if adjacent && !heading(lines, i+1) {
				return lineComment(lines, i)
			}
			return ""
		case cont && (strings.HasPrefix(s, "#else") || strings.HasPrefix(s, "#elif")):
			// Skip back to the matching #if.
			adjacent = false
			depth := 0
			for i--; i >= 0; i-- {
				t := strings.TrimSpace(lines[i])
				if strings.HasPrefix(t, "#endif") {
					depth++
				} else if strings.HasPrefix(t, "#if") {
					if depth == 0 {
						break
					}
					depth--
				}
			}
		case cont && (strings.HasPrefix(s, "#if") || strings.HasPrefix(s, "#endif")):
			adjacent = false
			continue
		default:
			return ""
		}
	}
	return ""
}

// continues reports whether a line may be the start of a declaration that
// goes on below it.
func continues(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "//") || strings.HasSuffix(s, "*/") {
		return false
	}
	return !strings.HasSuffix(s, ";") && !strings.HasSuffix(s, "}") && !strings.HasSuffix(s, "{")
}

// member returns the comment of a struct field or an enumerator: a trailing
// /**< */, ///< or one-line /** */ comment on its line, else the comment
// above it (before).
func (r *docReader) member(file string, line int) string {
	lines := r.lines(file)
	if line < 1 || line > len(lines) {
		return ""
	}
	if j := strings.Index(lines[line-1], "///<"); j >= 0 {
		// A trailing ///< comment, continued by ///< lines below.
		text := "//" + strings.TrimPrefix(lines[line-1][j:], "///<")
		for k := line; k < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[k]), "///<"); k++ {
			text += "\n" + strings.TrimPrefix(strings.TrimSpace(lines[k]), "///<")
		}
		return text
	}
	if j := strings.Index(lines[line-1], "/**<"); j >= 0 {
		var b strings.Builder
		b.WriteString(lines[line-1][j:])
		for k := line; !strings.Contains(b.String(), "*/") && k < len(lines); k++ {
			b.WriteString("\n" + lines[k])
		}
		return b.String()
	}
	if l := lines[line-1]; strings.Contains(l, "/**") {
		// A trailing /** */ comment on one line (cuda.h's smCount).
		j := strings.Index(l, "/**")
		if k := strings.Index(l[j:], "*/"); k > 0 && strings.TrimSpace(l[:j]) != "" {
			return l[j : j+k+2]
		}
	}
	if strings.Contains(lines[line-1], "{") {
		return "" // on the line that opens its type: the comment above is the type's
	}
	return r.before(file, line, false)
}

// macro returns the comment of a #define: trailing, or above it.
func (r *docReader) macro(file string, line int) string { return r.member(file, line) }

// comment returns the comment that ends on line i: a Doxygen comment, or,
// with plain, a plain /* */ comment that reads as documentation (plainDoc).
func comment(lines []string, i int, plain bool) string {
	end := i
	for ; i >= 0; i-- {
		if strings.Contains(lines[i], "/*") {
			break
		}
	}
	if i < 0 {
		return ""
	}
	first := lines[i][strings.Index(lines[i], "/*"):]
	switch {
	case strings.HasPrefix(first, "/**<"), strings.HasPrefix(first, "/*!<"):
		return "" // belongs to the member above
	case strings.HasPrefix(first, "/**"), strings.HasPrefix(first, "/*!"):
	case !plain || strings.TrimSpace(lines[i][:strings.Index(lines[i], "/*")]) != "":
		return "" // not a doc comment, or a trailing comment of a line of code
	}
	text := strings.Join(append([]string{first}, lines[i+1:end+1]...), "\n")
	if !doxygenComment(text) && !plainDoc(text) {
		return ""
	}
	return text
}

// lineComment returns the run of // comment lines that ends on line i, if it
// reads as documentation (plainDoc).
func lineComment(lines []string, i int) string {
	end := i
	for i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "//") {
		i--
	}
	var b []string
	for _, l := range lines[i : end+1] {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "///<") || strings.HasPrefix(l, "//!<") {
			return "" // continues a trailing comment of the member above
		}
		b = append(b, strings.TrimLeft(l, "/"))
	}
	text := "//" + strings.Join(b, "\n")
	if !plainDoc(text) {
		return ""
	}
	return text
}

// doxygenComment reports whether a raw comment is a /** */ or /*! */ one.
func doxygenComment(raw string) bool {
	return strings.HasPrefix(raw, "/**") || strings.HasPrefix(raw, "/*!")
}

// heading reports whether a plain comment above the declaration that starts
// on line i (0-based) heads a group of declarations instead of documenting
// that one: two or more declarations without comments of their own follow
// that one, each after a blank line (cusolverDn.h heads its groups so:
// /* LU solve */ above cusolverDnSgetrs, then cusolverDnDgetrs, ...), or
// #defines follow a #define without one. Other declarations right below it,
// without a blank line, are part of it (nccl.h's pncclAllReduce below
// ncclAllReduce).
func heading(lines []string, i int) bool {
	blocks := 0
	for i < len(lines) {
		s := strings.TrimSpace(lines[i])
		switch {
		case s == "":
			i++
			continue
		case blocks > 0 && (strings.HasPrefix(s, "/*") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "}")):
			return false
		}
		blocks++
		if blocks > 2 {
			return true
		}
		for j := i; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			if i > j && strings.HasPrefix(strings.TrimSpace(lines[i]), "#define") {
				return true
			}
		}
	}
	return false
}

// skipAliases steps back, from line i (0-based) just above a declaration,
// over declarations right above it that are the same but for their name
// (nccl.h declares pncclRecv, the profiling alias, above ncclRecv), and
// returns the line above them.
func skipAliases(lines []string, i int) int {
	decl := func(from int) string { // the declaration starting on line from
		var b strings.Builder
		for k := from; k < len(lines); k++ {
			b.WriteString(lines[k] + "\n")
			if strings.Contains(lines[k], ";") {
				break
			}
		}
		return b.String()
	}
	cur := reToken.FindAllString(decl(i+1), -1)
	for i >= 0 && strings.HasSuffix(strings.TrimSpace(lines[i]), ";") {
		start := i
		for start > 0 && continues(lines[start-1]) {
			start--
		}
		prev := reToken.FindAllString(decl(start), -1)
		if len(prev) != len(cur) {
			break
		}
		diff := 0
		for k := range prev {
			if prev[k] != cur[k] {
				diff++
			}
		}
		if diff != 1 {
			break
		}
		i = start - 1
	}
	return i
}

// reToken matches the tokens of C text, roughly.
var reToken = regexp.MustCompile(`\w+|\S`)

// reBanner matches the rules of a banner comment (/* ---- BLAS1 ---- */).
var reBanner = regexp.MustCompile(`[-=#*/]{4,}`)

// plainDoc reports whether a plain comment reads as documentation rather
// than as a section heading: cublas_api.h heads its groups of functions with
// /* GEMV */ and /* ------ CUBLAS BLAS1 Functions ------ */ right above
// the group's first function. A heading is all capitals, a rule, one word
// (/* aliases */), or a few words naming functions ("utility functions").
func plainDoc(raw string) bool {
	text := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(raw, "//"), "/*"), "*/"))
	words := strings.Fields(text)
	last := ""
	if len(words) > 0 {
		last = strings.ToLower(words[len(words)-1])
	}
	switch {
	case strings.ToUpper(text) == text, reBanner.MatchString(text), len(words) == 1:
		return false
	case len(words) <= 3 && (last == "functions" || last == "api" || last == "routines"):
		return false
	}
	return true
}

var (
	reLink    = regexp.MustCompile(`::(\w+)(\(\))?`)
	reRef     = regexp.MustCompile(`\\ref\s+(?:::)?(\w+)(?:\([^)]*\))?(?:\s+"([^"]*)")?`)
	reWordCmd = regexp.MustCompile(`\\[pecb]\s+`)
	reTag     = regexp.MustCompile(`</?(b|i|em|strong|tt|code|ul|ol|br|p|sup|sub|table|tr|td|th)\s*/?>`)
	reAlias   = regexp.MustCompile(`\\(note_\w+|notefnerr|link_\w+)\b`)
	reParam   = regexp.MustCompile(`^\\param(?:\s*\[[a-z, ]+\])?\s+(\w+)\s*(?:-\s*)?(.*)$`)
	reLinkCmd = regexp.MustCompile(`\\link\s+#?(\w+)\s*(.*?)\s*\\endlink`)
	reSpace   = regexp.MustCompile(`[ \t]+`)
)

// doxygen converts a Doxygen comment to Go doc comment text. links maps C
// names to Go names; a C name the package defines becomes a doc link.
func doxygen(raw string, links map[string]string) string {
	if raw == "" {
		return ""
	}
	raw = strings.TrimSpace(raw)
	for _, p := range []string{"/**<", "/*!<", "/**", "/*!", "/*", "//"} {
		if strings.HasPrefix(raw, p) {
			raw = raw[len(p):]
			break
		}
	}
	raw = strings.TrimSuffix(raw, "*/")
	var out []string
	inCode, skipping := false, false
	section := "" // the block a list line belongs to
	for _, l := range strings.Split(raw, "\n") {
		l = strings.TrimRight(l, " \t*")
		t := strings.TrimLeft(l, " \t")
		t = strings.TrimPrefix(t, "*")
		if !inCode {
			t = strings.TrimSpace(t)
		} else {
			t = strings.TrimPrefix(t, " ")
		}
		switch {
		case strings.HasPrefix(t, "\\cond") || strings.HasPrefix(t, "\\xmlonly") || strings.HasPrefix(t, "\\latexonly"):
			skipping = true
			continue
		case strings.HasPrefix(t, "\\endcond") || strings.HasPrefix(t, "\\endxmlonly") || strings.HasPrefix(t, "\\endlatexonly"):
			skipping = false
			continue
		case skipping:
			continue
		case strings.HasPrefix(t, "\\code"):
			inCode = true
			out = append(out, "")
			continue
		case strings.HasPrefix(t, "\\endcode"):
			inCode = false
			out = append(out, "")
			continue
		case inCode:
			out = append(out, "\t"+t)
			continue
		}
		t = reAlias.ReplaceAllString(t, "")
		t = strings.TrimSpace(t)
		switch {
		case strings.HasPrefix(t, "\\defgroup"), strings.HasPrefix(t, "\\ingroup"), strings.HasPrefix(t, "\\addtogroup"), strings.HasPrefix(t, "\\typedef"),
			t == "@{", t == "@}", strings.HasPrefix(t, "\\section"), strings.HasPrefix(t, "\\subsection"):
			continue
		case strings.HasPrefix(t, "\\brief"):
			t = strings.TrimSpace(strings.TrimPrefix(t, "\\brief"))
		case strings.HasPrefix(t, "\\param"):
			if section != "param" {
				out = append(out, "", "Parameters:", "")
				section = "param"
			}
			if m := reParam.FindStringSubmatch(t); m != nil {
				t = "  - " + m[1] + ": " + m[2]
			}
			out = append(out, inline(t, links))
			continue
		case strings.HasPrefix(t, "\\returns"), strings.HasPrefix(t, "\\return"):
			t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "\\returns"), "\\return"))
			out = append(out, "", "Returns:")
			section = "return"
		case strings.HasPrefix(t, "\\sa"), strings.HasPrefix(t, "\\see"):
			t = "See also: " + strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "\\see"), "\\sa"))
			out = append(out, "")
			section = "sa"
		case strings.HasPrefix(t, "\\note"):
			t = "Note: " + strings.TrimSpace(strings.TrimPrefix(t, "\\note"))
			out = append(out, "")
			section = ""
		case strings.HasPrefix(t, "\\deprecated"):
			t = strings.TrimSpace(strings.TrimPrefix(t, "\\deprecated"))
			section = ""
			if t == "" {
				// A bare \deprecated marks the declaration; the text
				// below it is its description (cuda.h's CU_JIT_LTO).
				out = append(out, "", bareDeprecated, "")
				continue
			}
			t = "Deprecated: " + t
			out = append(out, "")
		case strings.HasPrefix(t, "\\par"):
			t = strings.TrimSpace(strings.TrimPrefix(t, "\\par"))
			out = append(out, "")
			section = ""
		case strings.HasPrefix(t, "<li>"):
			t = "  - " + strings.TrimSpace(strings.TrimPrefix(t, "<li>"))
		case t == "":
			section = ""
		case section == "param":
			t = "    " + t // a parameter's description goes on
		}
		t = inline(t, links)
		if strings.TrimSpace(t) == "" && t != "" {
			continue
		}
		out = append(out, t)
	}
	// Collapse blank lines and trim.
	var b strings.Builder
	blank := true
	for _, l := range out {
		if strings.TrimSpace(l) == "" {
			blank = true
			continue
		}
		if blank && b.Len() > 0 {
			b.WriteString("\n\n")
		} else if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l)
		blank = false
	}
	return b.String()
}

// inline converts Doxygen's inline commands and HTML in one line.
func inline(t string, links map[string]string) string {
	t = reLinkCmd.ReplaceAllStringFunc(t, func(s string) string {
		m := reLinkCmd.FindStringSubmatch(s)
		if m[2] != "" {
			return m[2]
		}
		return "::" + m[1]
	})
	t = reRef.ReplaceAllStringFunc(t, func(s string) string {
		m := reRef.FindStringSubmatch(s)
		if m[2] != "" {
			return m[2]
		}
		return "::" + m[1]
	})
	t = reWordCmd.ReplaceAllString(t, "")
	t = reTag.ReplaceAllString(t, "")
	t = strings.ReplaceAll(t, "\\n", "")
	t = reLink.ReplaceAllStringFunc(t, func(s string) string {
		m := reLink.FindStringSubmatch(s)
		if g, ok := links[m[1]]; ok && links != nil {
			return "[" + g + "]"
		}
		return m[1] + m[2]
	})
	lead := len(t) - len(strings.TrimLeft(t, " "))
	return t[:lead] + reSpace.ReplaceAllString(strings.TrimSpace(t), " ")
}

// summary returns the first sentence of converted doc text, as plain text.
func summary(doc string) string {
	para, _, _ := strings.Cut(doc, "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	para = strings.NewReplacer("[", "", "]", "").Replace(para)
	if i := strings.Index(para, ". "); i >= 0 {
		para = para[:i+1]
	}
	return para
}
