// Command load runs the workload (package workload) against a cluster for a while and prints its
// report as a table, or as JSON with -json. It exits 1 when a key was lost, 2 when it could not
// run or verify. Ctrl-C ends the load early (the verification still runs).
//
//	go run ./test/workload/cmd/load -seed HOST:PORT -duration 60s -rate 500 [-json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/acko-io/acko/test/workload"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.String("seed", "", "host:port of a node (several: comma-separated)")
	duration := fs.Duration("duration", time.Minute, "how long the load runs")
	connectTimeout := fs.Duration("connect-timeout", 30*time.Second, "how long to retry connecting")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cfg := workload.Config{Log: stderr}
	fs.IntVar(&cfg.Rate, "rate", workload.DefaultRate, "operations per second in total, half writes half reads")
	fs.IntVar(&cfg.Keys, "keys", workload.DefaultKeys, "size of the key space")
	fs.IntVar(&cfg.Workers, "workers", workload.DefaultWorkers, "concurrent goroutines")
	fs.StringVar(&cfg.Namespace, "namespace", workload.DefaultNamespace, "namespace")
	fs.StringVar(&cfg.Set, "set", workload.DefaultSet, "set")
	fs.StringVar(&cfg.ClusterName, "cluster-name", "",
		"the cluster-name every node must answer (a node of another cluster at a seed's address is refused)")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", workload.DefaultOpTimeout, "total timeout of an operation")
	fs.DurationVar(&cfg.VerifyTimeout, "verify-timeout", workload.DefaultVerifyTimeout, "bound of the verification")
	fs.BoolVar(&cfg.SplitTolerant, "split-tolerant", false, "judge the verification as after a split brain")
	fs.BoolVar(&cfg.UseServicesAlternate, "use-services-alternate", false,
		"reach the nodes at their alternate access addresses (peers-clear-alt); the seeds must be such addresses")
	fs.BoolVar(&cfg.ProbeNodes, "probe-nodes", false,
		"dial every node the client holds once per tend interval and report the longest time one was unreachable")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *seeds == "" {
		_, _ = fmt.Fprintln(stderr, "load: -seed is required")
		return 2
	}
	cfg.Seeds = strings.Split(*seeds, ",")

	interrupted, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	connectCtx, cancel := context.WithTimeout(interrupted, *connectTimeout)
	defer cancel()
	r, err := workload.Start(connectCtx, cfg)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	select {
	case <-interrupted.Done():
	case <-time.After(*duration):
	}
	rep, verifyErr := r.Stop(context.Background())
	if err := printReport(stdout, rep, *asJSON); err != nil {
		_, _ = fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	switch {
	case verifyErr != nil:
		_, _ = fmt.Fprintln(stderr, "load:", verifyErr)
		return 2
	case rep.Lost > 0:
		return 1
	}
	return 0
}

func printReport(w io.Writer, rep workload.Report, asJSON bool) error {
	if !asJSON {
		_, err := io.WriteString(w, rep.Table())
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
