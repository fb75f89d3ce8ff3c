// Command astools is the test bed's asbackup and asrestore (package astools), run under either name.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/acko-io/acko/test/astools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := astools.Main(ctx, filepath.Base(os.Args[0]), os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
