// Call sites of a Go module and what each calls, from go/types.
//
// Usage: go run xtask/truth/go_calls.go ROOT > truth.jsonl
//
// One JSON line per call in a non-test file whose callee is a name or a selector chain
// (`f()`, `x.M()`, `pkg.F()`): {"file", "line", "name", "target"}, where `line` is the call's
// line, `name` the callee's last name, and `target` the declaration go/types resolves it to
// ({"file", "line"}: the file below ROOT and the line its name is written on), or null when
// it lies outside the module (the standard library, another module) or is not a declared
// function or type. Packages of the module are type-checked from source; the standard
// library from its export data; other modules are absent, so values of their types resolve
// nothing.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type target struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

type record struct {
	File   string  `json:"file"`
	Line   int     `json:"line"`
	Name   string  `json:"name"`
	Target *target `json:"target"`
}

type checker struct {
	root     string
	module   string
	fset     *token.FileSet
	std      types.Importer
	packages map[string]*types.Package
	files    map[string][]*ast.File
	infos    map[string]*types.Info
}

func modulePath(root string) string {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module ")), "\"")
		}
	}
	return ""
}

// Import type-checks a package of the module from its directory, else asks the standard
// library's export data.
func (c *checker) Import(path string) (*types.Package, error) {
	if pkg, ok := c.packages[path]; ok {
		return pkg, nil
	}
	if path == c.module || strings.HasPrefix(path, c.module+"/") {
		dir := filepath.Join(c.root, strings.TrimPrefix(strings.TrimPrefix(path, c.module), "/"))
		return c.check(path, dir), nil
	}
	return c.std.Import(path)
}

func (c *checker) check(path, dir string) *types.Package {
	c.packages[path] = types.NewPackage(path, filepath.Base(dir)) // breaks import cycles
	entries, _ := os.ReadDir(dir)
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(c.fset, filepath.Join(dir, name), nil, 0)
		if err == nil {
			files = append(files, f)
		}
	}
	info := &types.Info{
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: c, Error: func(error) {}}
	pkg, _ := conf.Check(path, c.fset, files, info)
	c.packages[path] = pkg
	c.files[path] = files
	c.infos[path] = info
	return pkg
}

func (c *checker) inModule(pkg *types.Package) bool {
	return pkg != nil && (pkg.Path() == c.module || strings.HasPrefix(pkg.Path(), c.module+"/"))
}

// callee is the object a call's function names, and the identifier spelling its last name.
func callee(fun ast.Expr, info *types.Info) (*ast.Ident, types.Object) {
	// A generic function's instance, `f[T](x)`, calls `f`.
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	switch f := fun.(type) {
	case *ast.Ident:
		return f, info.Uses[f]
	case *ast.SelectorExpr:
		// Only chains of names: `a.b.C()`, not `f().C()`.
		for x := f.X; ; {
			if s, ok := x.(*ast.SelectorExpr); ok {
				x = s.X
				continue
			}
			if _, ok := x.(*ast.Ident); !ok {
				return nil, nil
			}
			break
		}
		if sel, ok := info.Selections[f]; ok {
			return f.Sel, sel.Obj()
		}
		return f.Sel, info.Uses[f.Sel]
	}
	return nil, nil
}

func main() {
	root, _ := filepath.Abs(os.Args[1])
	c := &checker{
		root:     root,
		module:   modulePath(root),
		fset:     token.NewFileSet(),
		std:      importer.Default(),
		packages: map[string]*types.Package{},
		files:    map[string][]*ast.File{},
		infos:    map[string]*types.Info{},
	}
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Strings(dirs)
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		path := c.module
		if rel != "." {
			path = c.module + "/" + filepath.ToSlash(rel)
		}
		if _, done := c.packages[path]; !done {
			c.check(path, dir)
		}
	}
	paths := make([]string, 0, len(c.files))
	for path := range c.files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	out := json.NewEncoder(os.Stdout)
	for _, path := range paths {
		info := c.infos[path]
		for _, file := range c.files[path] {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				ident, obj := callee(call.Fun, info)
				if ident == nil {
					return true
				}
				at := c.fset.Position(call.Pos())
				rel, _ := filepath.Rel(root, at.Filename)
				rec := record{File: filepath.ToSlash(rel), Line: at.Line, Name: ident.Name}
				switch obj.(type) {
				case *types.Func, *types.TypeName:
					// A package that failed to import gets fake objects placed in the importing file.
					if !c.inModule(obj.Pkg()) {
						break
					}
					def := c.fset.Position(obj.Pos())
					if def.IsValid() && strings.HasPrefix(def.Filename, root+string(filepath.Separator)) {
						file, _ := filepath.Rel(root, def.Filename)
						rec.Target = &target{File: filepath.ToSlash(file), Line: def.Line}
					}
				}
				if err := out.Encode(rec); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				return true
			})
		}
	}
}
