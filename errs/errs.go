// Package errs defines the errors that cross package boundaries: a stable code from the HTTP contract and
// a message a person can read. One place (app's error handler) maps codes to HTTP statuses.
package errs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Codes named by the HTTP contract. Handlers and domain packages return them; app maps them to statuses.
const (
	BadRequest       = "bad_request"
	Unauthenticated  = "unauthenticated"
	Forbidden        = "forbidden"
	CSRF             = "csrf"
	NotFound         = "not_found"
	Conflict         = "conflict"
	UsernameTaken    = "username_taken"
	BadCredentials   = "bad_credentials"
	RateLimited      = "rate_limited"
	NotReady         = "not_ready"
	Unavailable      = "unavailable" // Redis or PostgreSQL does not answer (restarting, failing over): try again
	Internal         = "internal"
	TooLarge         = "too_large"
	MethodNotAllowed = "method_not_allowed"
	QRState          = "qr_state"
	BadCode          = "bad_code" // a QR login confirmed without the number its computer shows
	Timeout          = "timeout"
	UnsupportedMedia = "unsupported_media_type"
	HeaderTooLarge   = "header_too_large" // the request line and headers do not fit the server's buffer

	// The buying path.
	BadCaptcha    = "bad_captcha"
	BadPow        = "bad_pow" // a missing, wrong, expired or reused proof of work (altcha)
	InvalidPath   = "invalid_path"
	NotStarted    = "not_started"
	Ended         = "ended"
	SoldOut       = "sold_out"
	AlreadyBought = "already_bought"
	Queue         = "queue"          // the item sells through its waiting room: join the line
	FirstCome     = "first_come"     // the item sells first come, first served: it has no waiting room
	QueueNotOpen  = "queue_not_open" // the waiting room opens later
	BadPlace      = "bad_place"      // a signed place (X-Line-Place) that does not verify for the caller and item
	Paused        = "paused"         // an admin has paused the sale: buying, paths and turns wait
	Blocked       = "blocked"        // an admin has blocked the account
	LastAdmin     = "last_admin"     // the change would leave the shop with no active admin
	Staff         = "staff"          // merchants and admins never join a line or buy
	NotEligible   = "not_eligible"   // the account was made after the sale was approved (its rule)
	AddressLimit  = "address_limit"  // another entrant of the sale gave the same delivery address or phone

	// The merchant console.
	ActivityState = "activity_state"

	// Appeals (one person, one chance).
	NotInLine  = "not_in_line" // appealing about an item's line one is not in
	AppealOpen = "appeal_open" // an appeal about the item waits for its answer already

	// E-mail and account recovery.
	BadToken   = "bad_token"   // a mailed link's token that is unknown, used or expired
	EmailTaken = "email_taken" // another account has the e-mail address (verified)
	// EmailRequired: what was asked is mailed (a reminder), and the account has no verified address.
	EmailRequired = "email_required"

	// Payment.
	OrderState         = "order_state"
	AddressRequired    = "address_required" // paying an order that has no delivery address yet
	PaymentUnavailable = "payment_unavailable"
	PaymentRefused     = "payment_refused" // the provider chosen takes no such payment (its limit): choose another
)

// Codes lists every code above: each has its words in every language (code.<code>).
var Codes = []string{BadRequest, Unauthenticated, Forbidden, CSRF, NotFound, Conflict, UsernameTaken, BadCredentials,
	RateLimited, NotReady, Unavailable, Internal, TooLarge, MethodNotAllowed, QRState, BadCode, Timeout, UnsupportedMedia, BadCaptcha,
	InvalidPath, NotStarted, Ended, SoldOut, AlreadyBought, Queue, FirstCome, QueueNotOpen, Paused, Blocked, LastAdmin,
	ActivityState, OrderState, AddressRequired, PaymentUnavailable, PaymentRefused, HeaderTooLarge, BadPlace, Staff, NotEligible, AddressLimit,
	BadPow,
	NotInLine, AppealOpen,
	BadToken, EmailTaken,
	EmailRequired}

// Error is an error with a contract code and a message safe to show to a client.
type Error struct {
	Code       string
	Message    string
	RetryAfter time.Duration // for RateLimited: when to try again (the Retry-After header)
	// Fields says, for a bad_request about a form, what is wrong with each bad field, by its name: the
	// pages show each beside its field, all at once.
	Fields map[string]string
	// Whys are the bad fields of a form with their reasons' words (Bad), to say them in any language.
	Whys []Why
	// Key names the message's sentence in the words ("msg.<Key>"), for an error made by Say; Args fill
	// its verbs (SayWith).
	Key  string
	Args []any

	body   []byte    // the contract's JSON body, made once for errors answered at a crowd's rate
	bodies *sync.Map // and its body in each other language, made once each (lang → []byte)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an *Error with the given code and message.
func New(code, message string) *Error { return &Error{Code: code, Message: message} }

// Static returns an *Error whose JSON body is made once, for a package-level error that a hot path
// returns thousands of times a second (sold out).
func Static(code, message string) *Error {
	e := &Error{Code: code, Message: message, bodies: &sync.Map{}}
	e.body = staticBody(code, message)
	return e
}

func staticBody(code, message string) []byte {
	b, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
	return b
}

// Body returns the JSON body made by Static, or nil.
func (e *Error) Body() []byte { return e.body }

// BodyIn returns the JSON body made by Static as lang's reader reads it (its code's sentence in tr's
// words), made once per language; nil for an error Static did not make.
func (e *Error) BodyIn(lang string, tr Words) []byte {
	if e.body == nil || lang == "en" || tr == nil {
		return e.body
	}
	if b, ok := e.bodies.Load(lang); ok {
		return b.([]byte)
	}
	b := staticBody(e.Code, e.Localize(lang, tr).Message)
	e.bodies.Store(lang, b)
	return b
}

// Newf returns an *Error with a formatted message.
func Newf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a bad field: the message names the field and why it is wrong.
func Invalid(field, why string) *Error {
	return &Error{Code: BadRequest, Message: field + ": " + why}
}

// Code returns the contract code of err, or Internal for an error that carries none.
func Code(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Code // most are: without errors.As, whose target would escape
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code string) bool {
	if err == nil {
		return false // before errors.As, whose target would escape: a nil error costs nothing
	}
	if e, ok := err.(*Error); ok {
		return e.Code == code
	}
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Limited is a RateLimited error that says when to try again.
func Limited(retryAfter time.Duration) *Error {
	return &Error{Code: RateLimited, Message: "too many requests, try again shortly", RetryAfter: retryAfter}
}

// maxEcho is how many characters of a client's value an error quotes back (an order number it does not
// know, say): the value may be megabytes, the answer stays small.
const maxEcho = 64

// Echo is a client's value as an error quotes it: its first maxEcho characters, and "…" when it had more.
func Echo(s string) string {
	n := 0
	for i := range s {
		if n == maxEcho {
			return strings.ToValidUTF8(s[:i], "\uFFFD") + "…"
		}
		n++
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
