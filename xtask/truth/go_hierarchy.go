// Ancestor chains of a Go module's functions, methods and types, from go/ast.
//
// Usage: go run go_hierarchy.go ROOT > truth.jsonl
//
// One JSON line per top-level function, method and type: {"file", "line", "name",
// "ancestors"}, where a method's ancestors are its receiver's type and the others have none.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	root, _ := filepath.Abs(os.Args[1])
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() {
			name := info.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		emit := func(name *ast.Ident, ancestors []string) {
			line, _ := json.Marshal(map[string]interface{}{
				"file":      filepath.ToSlash(rel),
				"line":      fset.Position(name.Pos()).Line,
				"name":      name.Name,
				"ancestors": ancestors,
			})
			fmt.Println(string(line))
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				ancestors := []string{}
				if d.Recv != nil && len(d.Recv.List) > 0 {
					if t := receiver(d.Recv.List[0].Type); t != "" {
						ancestors = []string{t}
					}
				}
				emit(d.Name, ancestors)
			case *ast.GenDecl:
				if d.Tok == token.TYPE {
					for _, spec := range d.Specs {
						emit(spec.(*ast.TypeSpec).Name, []string{})
					}
				}
			}
		}
		return nil
	})
}

// receiver is the type a receiver expression names: T, *T, T[K], *T[K].
func receiver(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiver(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return receiver(t.X)
	case *ast.IndexListExpr:
		return receiver(t.X)
	}
	return ""
}
