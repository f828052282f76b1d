// Import edges of a Go module as the Go toolchain finds them.
//
// Usage: go run go_imports.go ROOT > truth.jsonl
//
// One JSON line per import spec: {"file", "line", "module", "resolved"}. Imports are read by
// go/parser; which package directory an import path is comes from `go list -e -json ./...`
// run in ROOT (with GOFLAGS=-mod=mod and GOPROXY=off, nothing is downloaded). `resolved` is
// the package's first non-test .go file by name, the file the graph lets stand for a package,
// or null when the path is no package of this module (the standard library, other modules).
package main

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Module     *struct{ Path string }
}

func main() {
	root, _ := filepath.Abs(os.Args[1])
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, _ := cmd.Output()
	dirs := map[string]string{}
	load(out, dirs, root)
	// `./...` leaves out testdata directories, which an import may still name: list every
	// imported path of this module that it did not list.
	var missing []string
	seen := map[string]bool{}
	walk(root, func(rel string, line int, importPath string) {
		if _, ok := dirs[importPath]; !ok && !seen[importPath] && strings.Contains(importPath, ".") {
			seen[importPath] = true
			missing = append(missing, importPath)
		}
	})
	if len(missing) > 0 {
		more := exec.Command("go", append([]string{"list", "-e", "-json"}, missing...)...)
		more.Dir = root
		more.Env = cmd.Env
		out, _ := more.Output()
		load(out, dirs, root)
	}
	walk(root, func(rel string, line int, importPath string) {
		var resolved interface{}
		if file, ok := dirs[importPath]; ok {
			r, _ := filepath.Rel(root, file)
			resolved = filepath.ToSlash(r)
		}
		text, _ := json.Marshal(map[string]interface{}{
			"file":     rel,
			"line":     line,
			"module":   importPath,
			"resolved": resolved,
		})
		fmt.Println(string(text))
	})
}

// load records each listed package of this module (its directory inside the root) by
// import path, with its first non-test file.
func load(out []byte, dirs map[string]string, root string) {
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if len(p.GoFiles) > 0 && strings.HasPrefix(p.Dir, root+string(filepath.Separator)) || p.Dir == root && len(p.GoFiles) > 0 {
			names := append([]string(nil), p.GoFiles...)
			sort.Strings(names)
			dirs[p.ImportPath] = filepath.Join(p.Dir, names[0])
		}
	}
}

// walk calls visit for every import spec of every .go file under root.
func walk(root string, visit func(rel string, line int, importPath string)) {
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		name := info.Name()
		if info.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for _, spec := range f.Imports {
			importPath, _ := strconv.Unquote(spec.Path.Value)
			visit(filepath.ToSlash(rel), fset.Position(spec.Pos()).Line, importPath)
		}
		return nil
	})
}
