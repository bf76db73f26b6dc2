package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// layers are docs/architecture.md's layers, top to bottom: a package may import packages of lower
// layers, and packages of its own layer only where the table says so (the domain's packages lean on
// each other without circles, which the compiler already refuses). The tools (cmd/, loadtest/) sit
// outside the product and may import what they need.
var layers = []struct {
	name     string
	pkgs     []string
	sideways bool // may import packages of its own layer
}{
	{"entry", []string{"seckill"}, false},
	{"composition", []string{"app"}, false},
	{"HTTP", []string{"handlers"}, false},
	{"background", []string{"jobs"}, false},
	{"domain", []string{"orders", "stock", "catalog", "auth", "payment", "payment/wechatpay", "payment/alipay", "payment/wechatpay/wechatfake", "payment/alipay/alipayfake", "captcha", "ratelimit", "pictures", "pow", "sift", "mail"}, true},
	{"data", []string{"models"}, false},
	{"leaves", []string{"errs", "i18n", "views", "assets", "internal/gate", "internal/jobreport", "internal/follow",
		"internal/geo", "internal/hexid", "internal/memo", "internal/connlimit", "internal/faultnet", "internal/addrkey"}, true},
}

// TestImportsPointDown fails when a package imports one above it, or one beside it where its layer
// does not allow that, or when a package belongs to no layer (a new one must be placed in the table
// here and in docs/architecture.md).
func TestImportsPointDown(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l.pkgs {
			rank[p] = i
		}
	}
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, "seckill/")
		if strings.HasPrefix(name, "cmd/") || strings.HasPrefix(name, "loadtest") ||
			strings.HasSuffix(name, "test") || name == "internal/testenv" { // the tools, and test support
			continue
		}
		from, ok := rank[name]
		if !ok {
			t.Errorf("%s is in no layer: place it in layers (and in docs/architecture.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "seckill/") {
				continue
			}
			to, ok := rank[strings.TrimPrefix(imp, "seckill/")]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is in no layer", name, imp)
			case to < from:
				t.Errorf("%s (%s) imports %s (%s), a layer above it", name, layers[from].name, imp, layers[to].name)
			case to == from && !layers[from].sideways:
				t.Errorf("%s imports %s beside it in the %s layer", name, imp, layers[from].name)
			}
		}
	}
}
