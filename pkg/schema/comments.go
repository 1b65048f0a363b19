package schema

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// Module is the import path of the repository's Go module.
const Module = "github.com/dpsim/dpsim"

// goComments reads the doc comments of every type and struct field declared under root/pkg,
// keyed as the reflector looks them up: "<import path>.<Type>" and "<import path>.<Type>.<Field>".
// Unlike jsonschema.Reflector.AddGoComments it keeps the whole comment of a type (not only its
// first sentence), reads unexported types too (the plan file's) and does not depend on the
// working directory.
func goComments(root string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		collect(f, Module+"/"+filepath.ToSlash(dir), out)
		return nil
	})
	return out, err
}

func collect(f *ast.File, pkg string, out map[string]string) {
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			key := pkg + "." + ts.Name.Name
			if txt := prose(doc.Text()); txt != "" {
				out[key] = txt
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				txt := field.Doc.Text()
				if txt == "" {
					txt = field.Comment.Text()
				}
				if txt = prose(txt); txt == "" {
					continue
				}
				for _, n := range field.Names {
					out[key+"."+n.Name] = txt
				}
			}
		}
	}
}

// prose joins the lines of each paragraph of a comment into one line (a code block, indented,
// keeps its lines), so that a description reads as text.
func prose(s string) string {
	var b strings.Builder
	for i, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if i > 0 {
			b.WriteString("\n\n")
		}
		sep := " "
		if strings.Contains(para, "\n\t") || strings.HasPrefix(para, "\t") {
			sep = "\n"
		}
		for j, line := range strings.Split(para, "\n") {
			if j > 0 {
				b.WriteString(sep)
			}
			if sep == " " {
				line = strings.TrimSpace(line)
			}
			b.WriteString(line)
		}
	}
	return b.String()
}
