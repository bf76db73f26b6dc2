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
//   - it is at most 2,048 bytes.
func LocalPath(target string) string {
	if len(target) == 0 || len(target) > maxRedirect || target[0] != '/' {
		return "/"
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return "/"
	}
	for i := 0; i < len(target); i++ {
		if b := target[i]; b < 0x21 || b > 0x7e || b == '\\' {
			return "/"
		}
	}
	return target
}

// redirectLocal redirects to target if it is a plain local path, else to the home page.
func redirectLocal(c *fiber.Ctx, target string) error {
	return c.Redirect(LocalPath(target))
}
