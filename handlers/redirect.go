package handlers

import "github.com/gofiber/fiber/v2"

// maxRedirect bounds a redirect target taken from a request.
const maxRedirect = 2048

// LocalPath returns target when it is a plain path on this site, else "/". Every redirect to a target
// that came from a request goes through it (assets/js/api.js mirrors it as localPath for the pages):
//   - it starts with one "/" and the next character is neither "/" nor "\", so it names no other host
//     ("//evil.example" and "/\evil.example" do, in browsers);
//   - every character is printable ASCII other than "\" (0x21 to 0x7e): no CR or LF to split the
//     Location header, and no tab or space, which browsers drop or turn into a host ("/\t/evil.example");
//   - every "%" starts an escape of two hex digits, so that the target parses as a URL;
//   - it is at most 2,048 bytes.
func LocalPath(target string) string {
	if len(target) == 0 || len(target) > maxRedirect || target[0] != '/' {
		return "/"
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(target); i++ {
		b := target[i]
		if b < 0x21 || b > 0x7e || b == '\\' {
			return "/"
		}
		if b == '%' && (i+2 >= len(target) || !isHex(target[i+1]) || !isHex(target[i+2])) {
			return "/"
		}
	}
	return target
}

func isHex(b byte) bool { return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' }

// redirectLocal redirects to target if it is a plain local path, else to the home page.
func redirectLocal(c *fiber.Ctx, target string) error {
	return c.Redirect(LocalPath(target))
}
