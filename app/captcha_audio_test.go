package app

import (
	"bytes"
	"strings"
	"testing"

	"seckill/internal/testenv"
)

// A person who cannot see the captcha hears its digits, in English or Chinese; a captcha that is not
// known has no sound.
func TestCaptchaAudio(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	id := b.call("GET", "/api/captcha", nil).json(t)["captcha_id"].(string)
	en := b.call("GET", "/api/captcha/"+id+"/audio?lang=en", nil)
	zh := b.call("GET", "/api/captcha/"+id+"/audio?lang=zh", nil)
	for name, r := range map[string]reply{"en": en, "zh": zh} {
		if r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" || !bytes.HasPrefix(r.Body, []byte("RIFF")) || len(r.Body) < 10_000 {
			t.Errorf("the %s sound: %d %s, %d bytes", name, r.Status, r.Header.Get("Content-Type"), len(r.Body))
		}
	}
	if bytes.Equal(en.Body, zh.Body) {
		t.Error("the Chinese sound is the English one")
	}
	expect(t, "an unknown captcha's sound", b.call("GET", "/api/captcha/"+strings.Repeat("0", 32)+"/audio", nil), 404, "not_found")
	expect(t, "a malformed id", b.call("GET", "/api/captcha/xyz/audio", nil), 404, "not_found")
	// The sound does not use the captcha up: its answer still opens a path.
	answer, _ := s.Redis.Get(t.Context(), "captcha:"+id).Result()
	if answer == "" {
		t.Error("listening used the captcha up")
	}
}
