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

// before returns the /** */ comment that ends just above line (1-based).
// With cont, the lines between may continue the declaration (a function
// whose return type is on the line above its name), and an #if/#else pair
// that declares the same function twice is stepped over.
func (r *docReader) before(file string, line int, cont bool) string {
	lines := r.lines(file)
	i := line - 2
	if cont {
		// The declaration may start on an earlier line.
		for i >= 0 && continues(lines[i]) {
			i--
		}
	}
	for ; i >= 0; i-- {
		s := strings.TrimSpace(lines[i])
		switch {
		case s == "":
			continue
		case strings.HasSuffix(s, "*/"):
			return comment(lines, i)
		case cont && (strings.HasPrefix(s, "#else") || strings.HasPrefix(s, "#elif")):
			// Skip back to the matching #if.
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
	if s == "" || strings.HasPrefix(s, "#") || strings.HasSuffix(s, "*/") {
		return false
	}
	return !strings.HasSuffix(s, ";") && !strings.HasSuffix(s, "}") && !strings.HasSuffix(s, "{")
}

// member returns the comment of a struct field or an enumerator: a trailing
// /**< */ comment on its line, else a /** */ comment right above it.
func (r *docReader) member(file string, line int) string {
	lines := r.lines(file)
	if line < 1 || line > len(lines) {
		return ""
	}
	if j := strings.Index(lines[line-1], "/**<"); j >= 0 {
		var b strings.Builder
		b.WriteString(lines[line-1][j:])
		for k := line; !strings.Contains(b.String(), "*/") && k < len(lines); k++ {
			b.WriteString("\n" + lines[k])
		}
		return b.String()
	}
	return r.before(file, line, false)
}

// macro returns the comment of a #define: trailing, or above it.
func (r *docReader) macro(file string, line int) string { return r.member(file, line) }

// comment returns the comment that ends on line i.
func comment(lines []string, i int) string {
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
	if strings.HasPrefix(first, "/**<") || strings.HasPrefix(first, "/*!<") || !(strings.HasPrefix(first, "/**") || strings.HasPrefix(first, "/*!")) {
		return "" // belongs to the member above, or not a doc comment
	}
	return strings.Join(append([]string{first}, lines[i+1:end+1]...), "\n")
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
	for _, p := range []string{"/**<", "/*!<", "/**", "/*!"} {
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
		case strings.HasPrefix(t, "\\defgroup"), strings.HasPrefix(t, "\\ingroup"), strings.HasPrefix(t, "\\addtogroup"),
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
			t = "Deprecated: " + strings.TrimSpace(strings.TrimPrefix(t, "\\deprecated"))
			out = append(out, "")
			section = ""
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
