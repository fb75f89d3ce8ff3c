// Command aerosim runs simulated Aerospike CE nodes (package test/aerosim) with an HTTP control
// API, for end-to-end tests of the operator without real asd processes:
//
//	aerosim -control 127.0.0.1:3099 -migration-duration 10s &
//	curl -XPOST 127.0.0.1:3099/nodes -d '{"cluster":"c1","name":"c1-0","ip":"127.0.10.1"}'
//	asinfo -h 127.0.10.1 -p 3000 -v statistics
//
// The endpoints are listed on aerosim.NewHandler. The timing flags default to what a real
// Aerospike CE 8.1.2.0 server showed.
//
// With -shards K it runs K simulators, whose control APIs listen on the -control port and the K-1
// ports after it: each settles only its own nodes at every call, so thousands of nodes spread over
// shards answer in time (test/localcluster/simclient routes each namespace's nodes to one).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/aerosim"
)

func main() {
	control := flag.String("control", "127.0.0.1:3099", "control API address (loopback only)")
	shards := flag.Int("shards", 1, "simulators, each with its own control API on the next port")
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
	flag.Int64Var(&opts.LoadRate, "load-rate", 0,
		"records a second a starting asd reads back from its persistent namespaces (0: at once)")
	flag.StringVar(&opts.LogDir, "log-dir", "", "where each node's log is written, in the CRI format (none when empty)")
	flag.Parse()
	if err := run(*control, *shards, opts); err != nil {
		log.Fatal(err)
	}
}

func run(control string, shards int, opts aerosim.Options) error {
	host, portText, err := net.SplitHostPort(control)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || shards < 1 || (shards > 1 && port == 0) {
		return fmt.Errorf("-shards %d on %s: want at least one, and a fixed port for more", shards, control)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []*http.Server
	var listeners []net.Listener
	for i := range shards {
		sim, err := aerosim.New(opts)
		if err != nil {
			return err
		}
		defer func() { _ = sim.Close() }()
		ln, err := aerosim.ListenLoopback(net.JoinHostPort(host, strconv.Itoa(port+i)))
		if err != nil {
			return err
		}
		servers = append(servers, &http.Server{Handler: aerosim.NewHandler(sim), ReadHeaderTimeout: 5 * time.Second})
		listeners = append(listeners, ln)
	}
	errs := make(chan error, shards)
	for i, srv := range servers {
		log.Printf("aerosim control API on http://%s", listeners[i].Addr())
		go func() {
			if err := srv.Serve(listeners[i]); !errors.Is(err, http.ErrServerClosed) {
				errs <- err
				stop()
				return
			}
			errs <- nil
		}()
	}
	<-ctx.Done()
	for _, srv := range servers {
		_ = srv.Shutdown(context.Background())
	}
	var all []error
	for range servers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
