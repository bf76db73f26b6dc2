package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
)

// TestSandboxBesideRealServicesNeedsItsSwitch (issue 28, row 11): PAY_SANDBOX=on with real PostgreSQL
// and Redis lets anyone pay any order for nothing; the server refuses to start so unless
// PAY_SANDBOX_ANYONE_CAN_PAY=yes says it is meant, and says why.
func TestSandboxBesideRealServicesNeedsItsSwitch(t *testing.T) {
	rdb := testenv.Redis(t)
	port := freePort(t)
	env := map[string]string{
		"DATABASE_URL": testenv.PostgresSchema(t), "REDIS_URL": testenv.RedisURLFor(rdb), "SESSION_SECRET": goodSecret,
		"PORT": port, "LISTEN_HOST": "127.0.0.1", "METRICS_LISTEN": "off", "BCRYPT_COST": "4", "LOG_LEVEL": "warn",
		"PAY_SANDBOX": "on",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, []string{"migrate"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	err := Run(ctx, []string{"serve"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "PAY_SANDBOX_ANYONE_CAN_PAY=yes") || !strings.Contains(err.Error(), "anyone pay any order") {
		t.Fatalf("serving the sandbox beside real services without the switch: %v, want a refusal that names PAY_SANDBOX_ANYONE_CAN_PAY and the danger", err)
	}

	// With the switch it serves (and still warns).
	env["PAY_SANDBOX_ANYONE_CAN_PAY"] = "yes"
	ctx, stop := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: &safeWriter{w: &logs}})
	}()
	testenv.EventuallySaw(t, 30*time.Second, "the server with PAY_SANDBOX_ANYONE_CAN_PAY=yes to come up", func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/sandbox/pay/none")
		if err == nil {
			resp.Body.Close()
			return true, ""
		}
		select {
		case err := <-done:
			t.Fatalf("with PAY_SANDBOX_ANYONE_CAN_PAY=yes the server stopped: %v", err)
		default:
		}
		return false, err.Error()
	})
	stop()
	if err := <-done; err != nil {
		t.Errorf("stopping: %v", err)
	}
}
