// Command aerosim runs simulated Aerospike CE nodes (package test/aerosim) with an HTTP control
// API, for end-to-end tests of the operator without real asd processes:
//
//	aerosim -control 127.0.0.1:3099 -migration-duration 10s &
//	curl -XPOST 127.0.0.1:3099/nodes -d '{"cluster":"c1","name":"c1-0","ip":"127.0.10.1"}'
//	asinfo -h 127.0.10.1 -p 3000 -v statistics
//
// The endpoints are listed on aerosim.NewHandler. The timing flags default to what a real
// Aerospike CE 8.1.2.0 server showed.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/aerosim"
)

func main() {
	control := flag.String("control", "127.0.0.1:3099", "control API address (loopback only)")
	opts := aerosim.Options{}
	flag.IntVar(&opts.Port, "port", 3000, "info port of every simulated node")
	flag.DurationVar(&opts.MigrationDuration, "migration-duration", 20*time.Second,
		"how long migrations take after a membership change")
	flag.DurationVar(&opts.RestartDowntime, "restart-downtime", 200*time.Millisecond,
		"how long a warm-restarted asd does not listen")
	flag.DurationVar(&opts.JoinDelay, "join-delay", 2*time.Second,
		"how long a started asd reports cluster_size 0 before it joins")
	flag.DurationVar(&opts.DropDelay, "drop-delay", 2*time.Second,
		"how long the others keep counting a node that stopped before they drop it")
	flag.DurationVar(&opts.HangDropDelay, "hang-drop-delay", 3*time.Second,
		"how long the others keep counting a hung node before they drop it")
	flag.DurationVar(&opts.CrashLoopBackoff, "crash-loop-backoff", 10*time.Second,
		"how long a node whose config asd refused waits before it starts again")
	flag.Parse()
	if err := run(*control, opts); err != nil {
		log.Fatal(err)
	}
}

func run(control string, opts aerosim.Options) error {
	sim, err := aerosim.New(opts)
	if err != nil {
		return err
	}
	defer func() { _ = sim.Close() }()
	ln, err := aerosim.ListenLoopback(control)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: aerosim.NewHandler(sim), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("aerosim control API on http://%s", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
