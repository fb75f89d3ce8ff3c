// Command localcluster runs ACKO on a local cluster (package test/localcluster): a real control
// plane on 127.0.0.1, kwok nodes, the Aerospike simulator, the manager binary with its own RBAC,
// and Prometheus. `make local-assets build` builds what it runs.
//
//	localcluster up [--detach]   start, apply the 3-node sample, print what to try next; in the
//	                             foreground until Ctrl-C (then stop), or detached
//	localcluster down            stop what `up` started (by the PIDs it recorded)
//	localcluster wipe            stop and delete the state (.local/)
//	localcluster sync            the sync loop alone (what `up --detach` leaves running)
//
// With ACKO_BACKEND=real (make run-local BACKEND=real) the sample runs on real asd nodes
// (test/realnode: root and the binaries of ACKO_ASD_DIR).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/localcluster"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: localcluster up [--detach] | down | wipe | sync")
	}
	flag.Parse()
	opts := localcluster.LocalOptions()
	// BACKEND=real (make run-local BACKEND=real): the sample's pods run real asd nodes.
	opts.RealNodes = os.Getenv(localcluster.EnvBackend) == localcluster.TestBackendReal
	var err error
	switch flag.Arg(0) {
	case "up":
		err = up(opts, flag.Args()[1:])
	case "down":
		err = opts.Stop()
	case "wipe":
		err = opts.Wipe()
	case "sync":
		err = syncLoop(opts)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func up(opts localcluster.Options, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	detach := fs.Bool("detach", false, "leave the cluster running in the background and return")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	began := time.Now()
	c := localcluster.New(opts)
	if err := c.Up(ctx); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err == nil {
		if *detach {
			err = c.StartSyncProcess(exe, "sync")
		} else {
			err = c.StartSync(os.Stdout)
		}
	}
	if err != nil {
		return stopAfter(c, err)
	}
	fmt.Printf("[localcluster] manager healthy %.1fs after start\n", time.Since(began).Seconds())
	if err := opts.ApplySample(ctx); err != nil {
		return stopAfter(c, err)
	}
	sample, _ := opts.SampleName()
	c.WaitSampleRunning(ctx, 2*time.Minute, 15*time.Second)
	if ctx.Err() == nil {
		fmt.Print(opts.NextSteps(sample, *detach))
	}
	if *detach {
		return nil
	}
	select {
	case <-ctx.Done():
		fmt.Println("\n[localcluster] stopping")
	case name := <-c.Exited():
		fmt.Printf("[localcluster] %s exited (see %s); stopping\n", name, opts.LogPath(name))
	}
	return c.Down()
}

func stopAfter(c *localcluster.Cluster, err error) error {
	if downErr := c.Down(); downErr != nil {
		return fmt.Errorf("%w (and stopping: %w)", err, downErr)
	}
	return err
}

// syncLoop runs the sync loop until SIGTERM: `up --detach` starts it as a background process.
func syncLoop(opts localcluster.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	s, err := localcluster.NewSyncer(cfg, opts, os.Stdout)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
