// Command kubectl-acko is the kubectl plugin `kubectl acko` (internal/kubectlacko). Install it on
// the PATH, e.g. `go install github.com/acko-io/acko/cmd/kubectl-acko@latest`, and run `kubectl acko`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/acko-io/acko/internal/kubectlacko"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectlacko.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
