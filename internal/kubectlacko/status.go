package kubectlacko

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

func (o *options) newStatusCommand() *cobra.Command {
	var output string
	timeout := readTimeout
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show an AerospikeCluster: phase, conditions, pods, operation progress and recent events",
		Long: "Shows the phase, the conditions with their reasons and messages, pending changes while paused, " +
			"the pods (rack, IP, readiness, last restart), the current or last operation with its progress, " +
			"and the cluster's latest events. -o json|yaml prints the same for machines.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeClusterNames,
		PreRunE:           func(*cobra.Command, []string) error { return checkOutput(output) },
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.status(cmd.Context(), args[0], output, timeout)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the API server")
	return cmd
}

func (o *options) status(ctx context.Context, name, output string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	report, err := s.report(ctx, name)
	if err != nil {
		return timedOut(err, timeout, "the API server")
	}
	if output != "" {
		return printData(o.streams.Out, output, report)
	}
	return renderStatus(o.streams.Out, report, o.now())
}

// report reads what status shows.
func (s *session) report(ctx context.Context, name string) (clusterReport, error) {
	c, err := s.getCluster(ctx, name)
	if err != nil {
		return clusterReport{}, err
	}
	pods, err := s.clusterPods(ctx, c)
	if err != nil {
		return clusterReport{}, fmt.Errorf("listing the pods of %s/%s: %w", c.Namespace, c.Name, err)
	}
	events, err := s.clusterEvents(ctx, c)
	if err != nil {
		return clusterReport{}, fmt.Errorf("listing the events of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return buildReport(c, pods, events), nil
}

func (o *options) newListCommand() *cobra.Command {
	var output string
	var allNamespaces bool
	timeout := readTimeout
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List AerospikeClusters with their phase and operation progress",
		Long: "Lists the AerospikeClusters of the namespace (-A: of every namespace) with the columns of " +
			"kubectl get asc and the progress of their current or last operation.",
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return checkOutput(output) },
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.list(cmd.Context(), allNamespaces, output, timeout)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the clusters of every namespace")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the API server")
	return cmd
}

func (o *options) list(ctx context.Context, allNamespaces bool, output string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return err
	}
	clusters, err := s.listClusters(ctx, allNamespaces)
	if err != nil {
		return timedOut(err, timeout, "the API server")
	}
	items := listItems(clusters)
	if output != "" {
		return printData(o.streams.Out, output, items)
	}
	if len(items) == 0 {
		where := "in namespace " + s.namespace
		if allNamespaces {
			where = "in any namespace"
		}
		_, err = fmt.Fprintf(o.streams.ErrOut, "No AerospikeClusters found %s.\n", where)
		return err
	}
	return renderList(o.streams.Out, items, allNamespaces, o.now())
}

// listClusters lists the clusters of the session's namespace, or of all.
func (s *session) listClusters(ctx context.Context, allNamespaces bool) ([]ackov1alpha1.AerospikeCluster, error) {
	list := &ackov1alpha1.AerospikeClusterList{}
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(s.namespace))
	}
	if err := s.client.List(ctx, list, opts...); err != nil {
		return nil, explain(err, s.namespace, "")
	}
	return list.Items, nil
}
