package errs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"seckill/errs"
	"seckill/i18n"
)

// Every error code, every field a form's error names and every reason has its words in both languages:
// a person never reads a field name or an English sentence on a Chinese page.
func TestEveryErrorHasWordsInBothLanguages(t *testing.T) {
	need := map[string]bool{}
	for _, c := range errs.Codes {
		need["code."+c] = true
	}
	// The reasons given in the code: errs.W("field", "reason"), and the fields of the helpers that check
	// a text field (their reasons listed with them).
	literal := regexp.MustCompile(`errs\.W\("([a-z_]+)", "([a-z_]+)"`)
	anyField := regexp.MustCompile(`errs\.W\(field, "([a-z_]+)"`)
	said := regexp.MustCompile(`errs\.Say\(errs\.[A-Za-z]+, "([a-z_]+)"`)
	helpers := map[*regexp.Regexp][]string{
		regexp.MustCompile(`\btext\("([a-z_]+)"`):        {"empty", "max_bytes", "control_chars"},
		regexp.MustCompile(`\blineText\("([a-z_]+)"`):    {"empty", "max_chars", "one_line"},
		regexp.MustCompile(`\buploaded\(c, "([a-z_]+)"`): {"choose_file"},
	}
	files := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			need["field."+m[1]], need["why."+m[2]] = true, true
		}
		for _, m := range anyField.FindAllStringSubmatch(string(src), -1) {
			need["why."+m[1]] = true
		}
		for _, m := range said.FindAllStringSubmatch(string(src), -1) {
			need["msg."+m[1]] = true
		}
		for re, whys := range helpers {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				need["field."+m[1]] = true
				for _, w := range whys {
					need["why."+w] = true
				}
			}
		}
		return nil
	})
	if err != nil || files < 50 {
		t.Fatalf("reading the sources: %d files, %v", files, err)
	}
	if len(need) < 80 {
		t.Fatalf("only %d words found to check: the scan missed the errors", len(need))
	}
	for key := range need {
		for _, lang := range i18n.Languages {
			if got := i18n.For(lang).T(key); got == key || lang != "en" && got == i18n.For("en").T(key) {
				t.Errorf("%s has no words in %s", key, lang)
			}
		}
	}
}

// A form's error says every bad field at once, each in the reader's words, with the field's own label.
func TestBadFormInBothLanguages(t *testing.T) {
	e := errs.Bad(errs.W("seckill_price_cents", "not_above_original"), errs.W("stock", "between", 1, "1,000,000"))
	if e.Message != "Flash price: must not be above the original price; Stock: must be between 1 and 1,000,000" ||
		e.Fields["stock"] != "must be between 1 and 1,000,000" {
		t.Errorf("in English: %q %v", e.Message, e.Fields)
	}
	zh := e.Localize("zh", i18n.For("zh").T)
	if zh.Message != "秒杀价：不能高于原价；库存：须在 1 到 1,000,000 之间" || zh.Fields["seckill_price_cents"] != "不能高于原价" {
		t.Errorf("in Chinese: %q %v", zh.Message, zh.Fields)
	}
	if e.Message == zh.Message {
		t.Error("localizing changed the English error")
	}
	other := errs.New(errs.OrderState, "this order is paid: there is nothing to pay").Localize("zh", i18n.For("zh").T)
	if other.Message != "订单当前状态下无法进行此操作。" {
		t.Errorf("a code's words in Chinese: %q", other.Message)
	}
}
