package orders_test

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every change of an order's status goes through this package's table: models.MoveOrder, the one
// statement that writes a status, is called from this package alone (its apply, which takes the row of the table); no other statement of models
// writes an order's status; and the jobs and handlers write no SQL of their own (they call models and
// this package).
func TestStatusChangesGoThroughTheTable(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("MoveOrder is called from orders alone", func(t *testing.T) {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, pos := range moveOrderUses(f) {
				if rel != filepath.Join("orders", "transitions.go") { // move, the one caller
					t.Errorf("%s:%d calls models.MoveOrder: only the orders package changes an order's status", rel, fset.Position(pos).Line)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	pkgs := typeCheck(t, root, "seckill/models", "seckill/jobs", "seckill/handlers")
	t.Run("models writes a status in MoveOrder alone", func(t *testing.T) {
		p := pkgs["seckill/models"]
		for _, f := range p.files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || fn.Name.Name == "MoveOrder" {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok && writesOrderStatus(p.info, call) {
						t.Errorf("%s: %s writes an order's status: only models.MoveOrder may, called by the orders package",
							p.fset.Position(call.Pos()), fn.Name.Name)
					}
					return true
				})
			}
		}
	})
	t.Run("jobs and handlers write no SQL of their own", func(t *testing.T) {
		for _, path := range []string{"seckill/jobs", "seckill/handlers"} {
			p := pkgs[path]
			for _, f := range p.files {
				ast.Inspect(f, func(n ast.Node) bool {
					// DB() hands out the connection pool, for a ping: no statement of its own.
					if call, ok := n.(*ast.CallExpr); ok && gormMethod(p.info, call) != "" && gormMethod(p.info, call) != "DB" {
						t.Errorf("%s: %s calls gorm's %s: queries live in models (or in orders)", p.fset.Position(call.Pos()), path, gormMethod(p.info, call))
					}
					return true
				})
			}
		}
	})
}

// moveOrderUses answers where f names models.MoveOrder.
func moveOrderUses(f *ast.File) []token.Pos {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "seckill/models" {
			name := "models"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
	}
	var lines []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "MoveOrder" {
			if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] {
				lines = append(lines, sel.Pos())
			}
		}
		return true
	})
	return lines
}

type checked struct {
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
}

// typeCheck type-checks the non-test files of the packages, their imports read from the build cache's
// export data (go list -export), so that a call is known by its receiver's type, not its name.
func typeCheck(t *testing.T, root string, paths ...string) map[string]checked {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Fields(string(out)) {
		if p, file, ok := strings.Cut(line, "="); ok {
			exports[p] = file
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	res := map[string]checked{}
	for _, path := range paths {
		dir := filepath.Join(root, strings.TrimPrefix(path, "seckill/"))
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(path, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", path, err)
		}
		res[path] = checked{fset, files, info}
	}
	return res
}

// gormMethod answers the name of the *gorm.DB method call calls, or "".
func gormMethod(info *types.Info, call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	s, ok := info.Selections[sel]
	if !ok || s.Kind() != types.MethodVal {
		return ""
	}
	recv := s.Recv()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	if n, ok := recv.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "gorm.io/gorm" && n.Obj().Name() == "DB" {
		return sel.Sel.Name
	}
	return ""
}

var setStatus = regexp.MustCompile(`(?is)^\s*update\s+"?orders"?\s+set\s+(.*?)(\swhere\s|$)`)

// writesOrderStatus reports whether call is a gorm statement that writes the status column of orders:
// an Exec of UPDATE orders SET … status = …, or an update on the Order model naming status (or
// writing a whole Order).
func writesOrderStatus(info *types.Info, call *ast.CallExpr) bool {
	switch gormMethod(info, call) {
	case "Exec":
		if len(call.Args) == 0 {
			return false
		}
		tv := info.Types[call.Args[0]]
		if tv.Value == nil || tv.Value.Kind() != constant.String {
			return true // SQL built at run time: it cannot be read here, so it is not allowed
		}
		m := setStatus.FindStringSubmatch(constant.StringVal(tv.Value))
		return m != nil && regexp.MustCompile(`(?i)\bstatus\s*=`).MatchString(m[1])
	case "Update", "UpdateColumn", "Updates", "UpdateColumns", "Save":
	default:
		return false
	}
	// The call and the chain it is made on: Model(&Order{}), Table("orders"), Select("status"), the values.
	var chain []*ast.CallExpr
	for c := call; c != nil; {
		chain = append(chain, c)
		sel, _ := c.Fun.(*ast.SelectorExpr)
		if sel == nil {
			break
		}
		c, _ = sel.X.(*ast.CallExpr)
	}
	selected := false
	for _, c := range chain {
		selected = selected || gormMethod(info, c) == "Select"
	}
	onOrders, status := false, false
	for _, c := range chain {
		name := gormMethod(info, c)
		for i, a := range c.Args {
			if isOrder(info.Types[a].Type) && (name == "Model" || name == "Updates" || name == "Save" || name == "UpdateColumns") {
				onOrders = true
				if name != "Model" {
					status = status || !selected // a whole Order, its status included
				}
			}
			if v := info.Types[a].Value; v != nil && v.Kind() == constant.String {
				s := constant.StringVal(v)
				switch {
				case name == "Table" && s == "orders":
					onOrders = true
				case (name == "Select" && (s == "status" || s == "*")) || ((name == "Update" || name == "UpdateColumn") && i == 0 && s == "status"):
					status = true
				}
			}
			if lit, ok := a.(*ast.CompositeLit); ok {
				for _, e := range lit.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if v := info.Types[kv.Key].Value; v != nil && v.Kind() == constant.String && constant.StringVal(v) == "status" {
							status = true
						}
					}
				}
			}
		}
	}
	return onOrders && status
}

func isOrder(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "seckill/models" && n.Obj().Name() == "Order"
}
