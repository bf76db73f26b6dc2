// Command seckill is the flash-sale server and its tools: serve (the default), migrate, user create.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"seckill/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args[1:], app.Env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	switch {
	case err == nil:
	case errors.Is(err, app.ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}
