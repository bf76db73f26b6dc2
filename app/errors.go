package app

import (
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"seckill/errs"
	"seckill/handlers"
	"seckill/i18n"
)

// statusOf maps each contract code to its HTTP status: the one place where codes meet statuses.
var statusOf = map[string]int{
	errs.BadRequest:         fiber.StatusBadRequest,
	errs.Unauthenticated:    fiber.StatusUnauthorized,
	errs.BadCredentials:     fiber.StatusUnauthorized,
	errs.Forbidden:          fiber.StatusForbidden,
	errs.CSRF:               fiber.StatusForbidden,
	errs.NotFound:           fiber.StatusNotFound,
	errs.MethodNotAllowed:   fiber.StatusMethodNotAllowed,
	errs.Conflict:           fiber.StatusConflict,
	errs.UsernameTaken:      fiber.StatusConflict,
	errs.LastAdmin:          fiber.StatusConflict,
	errs.QRState:            fiber.StatusConflict,
	errs.BadCode:            fiber.StatusBadRequest,
	errs.BadCaptcha:         fiber.StatusBadRequest,
	errs.BadPow:             fiber.StatusBadRequest,
	errs.InvalidPath:        fiber.StatusForbidden,
	errs.NotStarted:         fiber.StatusForbidden,
	errs.Ended:              fiber.StatusForbidden,
	errs.SoldOut:            fiber.StatusConflict,
	errs.AlreadyBought:      fiber.StatusConflict,
	errs.Queue:              fiber.StatusConflict,
	errs.FirstCome:          fiber.StatusConflict,
	errs.QueueNotOpen:       fiber.StatusForbidden,
	errs.BadPlace:           fiber.StatusBadRequest,
	errs.Paused:             fiber.StatusForbidden,
	errs.Blocked:            fiber.StatusForbidden,
	errs.Staff:              fiber.StatusForbidden,
	errs.NotEligible:        fiber.StatusForbidden,
	errs.AddressLimit:       fiber.StatusConflict,
	errs.NotInLine:          fiber.StatusConflict,
	errs.AppealOpen:         fiber.StatusConflict,
	errs.BadToken:           fiber.StatusBadRequest,
	errs.EmailTaken:         fiber.StatusConflict,
	errs.EmailRequired:      fiber.StatusConflict,
	errs.ActivityState:      fiber.StatusConflict,
	errs.OrderState:         fiber.StatusConflict,
	errs.AddressRequired:    fiber.StatusConflict,
	errs.PaymentUnavailable: fiber.StatusServiceUnavailable,
	errs.PaymentRefused:     fiber.StatusUnprocessableEntity,
	errs.TooLarge:           fiber.StatusRequestEntityTooLarge,
	errs.HeaderTooLarge:     fiber.StatusRequestHeaderFieldsTooLarge,
	errs.UnsupportedMedia:   fiber.StatusUnsupportedMediaType,
	errs.Timeout:            fiber.StatusRequestTimeout,
	errs.RateLimited:        fiber.StatusTooManyRequests,
	errs.NotReady:           fiber.StatusServiceUnavailable,
	errs.Unavailable:        fiber.StatusServiceUnavailable,
	errs.Internal:           fiber.StatusInternalServerError,
}

// errorHandler turns every error a handler returns into the contract's body. Errors that carry no code
// are logged with the request id and answered with a generic message: no internal text reaches a client.
func errorHandler(log *slog.Logger, now func() time.Time) fiber.ErrorHandler {
	tooLarge := rate.NewLimiter(rate.Every(time.Second), 5)
	return func(c *fiber.Ctx, err error) error {
		e := toContractError(c, err, log)
		if e.Code == errs.HeaderTooLarge && tooLarge.Allow() {
			// The client's doing (a long address, big cookies), answered before any route: a few lines a
			// second say it happens, without a flood of them filling the log.
			log.WarnContext(c.UserContext(), "request line and headers too large", "ip", c.IP(), "limit_bytes", c.App().Config().ReadBufferSize)
		}
		status, ok := statusOf[e.Code]
		if !ok {
			status = fiber.StatusInternalServerError
		}
		if status == fiber.StatusNotFound && !isAPI(c.Path()) {
			c.Status(status)
			return c.Render("error", handlers.PageData(c, now(), "notfound.title"), handlers.Layout)
		}
		// Every error is said in the request's language; those answered at a crowd's rate (sold out, a
		// wrong login) have their body made once per language.
		lang := handlers.Lang(c)
		words := i18n.For(lang).T
		if b := e.BodyIn(lang, words); b != nil {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Status(status).Send(b)
		}
		e = e.Localize(lang, words)
		if e.RetryAfter > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		}
		return c.Status(status).JSON(errorBody{e.Code, e.Message, e.Fields})
	}
}

// A request fasthttp could not read (its line and headers too large, or late) reaches the error handler
// with none of its headers parsed: its language is not known, so these answers say it in both.
var (
	errHeaderTooLarge = wordsOf(errs.HeaderTooLarge)
	errTimeout        = wordsOf(errs.Timeout)
)

// unreadWords is a code's answer in English (which the handler translates for a request that names its
// language) and in both languages at once (for one that names none).
type unreadWords struct{ one, both *errs.Error }

func wordsOf(code string) unreadWords {
	en, zh := i18n.For("en").T("code."+code), i18n.For("zh").T("code."+code)
	return unreadWords{errs.Static(code, en), errs.Static(code, en+" "+zh)}
}

func (w unreadWords) pick(c *fiber.Ctx) *errs.Error {
	if c.Get(fiber.HeaderAcceptLanguage) == "" && c.Cookies(handlers.LangCookie) == "" {
		return w.both
	}
	return w.one
}

// errorBody is the contract's error JSON.
type errorBody struct {
	Error   string            `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"` // bad fields of a form, each with its reason
}

func toContractError(c *fiber.Ctx, err error, log *slog.Logger) *errs.Error {
	if e, ok := err.(*errs.Error); ok {
		return e // most are: without errors.As, whose target would escape
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return e
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return errs.New(errs.NotFound, "there is nothing at this address")
		case fiber.StatusMethodNotAllowed:
			return errs.New(errs.MethodNotAllowed, "this address does not take "+errs.Echo(c.Method()))
		case fiber.StatusRequestEntityTooLarge:
			if uri := string(c.Request().RequestURI()); c.Method() == fiber.MethodPost && handlers.IsUpload(uri) {
				// A merchant's image or CSV over the upload's room: said as the file's limit, not the body's.
				return handlers.TooLargeUpload(handlers.UploadField(uri))
			}
			return errs.New(errs.TooLarge, "the request body is too large")
		case fiber.StatusRequestHeaderFieldsTooLarge:
			// fasthttp could not fit the request line and headers in its read buffer (ReadBufferSize).
			return errHeaderTooLarge.pick(c)
		case fiber.StatusBadRequest, fiber.StatusUnprocessableEntity:
			return errs.New(errs.BadRequest, "the request is malformed")
		case fiber.StatusTooManyRequests:
			return errs.New(errs.RateLimited, "too many requests, try again shortly")
		case fiber.StatusRequestTimeout:
			// A connection that sent nothing in time (an idle keep-alive one, usually): not our failure.
			// fasthttp forgets a request's headers when its body is late, and has none of a request
			// whose headers are late.
			c.Set(fiber.HeaderConnection, "close")
			return errTimeout.pick(c)
		}
	}
	if storeAway(err) {
		// Not a bug of ours and not the client's: a store restarting or failing over. Said as such, with
		// when to try again, and logged as a warning (a failover makes a burst of them).
		log.WarnContext(c.UserContext(), "request failed: a store did not answer",
			"err", err, "method", c.Method(), "path", c.Path(), "request_id", requestID(c))
		return errStoreAway
	}
	log.ErrorContext(c.UserContext(), "request failed",
		"err", err, "method", c.Method(), "path", c.Path(), "request_id", requestID(c))
	return errs.New(errs.Internal, "something went wrong on our side; please try again")
}

var errStoreAway = &errs.Error{Code: errs.Unavailable, Message: "Part of the shop is not answering for a moment: try again in a few seconds. If you were buying, the item's page will tell you what happened.",
	RetryAfter: 2 * time.Second}

// storeAway reports whether err says Redis or PostgreSQL is away for a moment rather than a fault of
// ours: a connection refused, reset or timed out, a pool with no connection to give, or a Redis that
// refuses writes while it loads, fails over or lacks the replicas it must have (min-replicas-to-write).
func storeAway(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, driver.ErrBadConn) {
		return true
	}
	for _, prefix := range []string{"READONLY", "NOREPLICAS", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}
