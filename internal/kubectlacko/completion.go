package kubectlacko

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completionTimeout bounds the API calls of one completion: a shell waits for them.
const completionTimeout = 5 * time.Second

// completeClusterNames completes the NAME argument with the clusters of the namespace.
func (o *options) completeClusterNames(cmd *cobra.Command, args []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	clusters, err := s.listClusters(ctx, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, c := range clusters {
		if strings.HasPrefix(c.Name, toComplete) {
			names = append(names, c.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completePodNames completes --pods with the pods of the cluster named first, one more after those
// already typed (the flag takes a comma-separated list).
func (o *options) completePodNames(cmd *cobra.Command, args []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	c, err := s.getCluster(ctx, args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := c.DesiredPodNames()
	for name := range c.Status.Pods {
		names = append(names, name)
	}
	slices.Sort(names)
	names = slices.Compact(names)

	cut := strings.LastIndex(toComplete, ",") + 1
	typed, partial := strings.Split(toComplete[:cut], ","), toComplete[cut:]
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, partial) && !slices.Contains(typed, name) {
			out = append(out, toComplete[:cut]+name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// registerNamespaceCompletion completes -n with the namespaces the user may list.
func (o *options) registerNamespaceCompletion(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("namespace",
		func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
			defer cancel()
			s, err := o.connect()
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			list := &corev1.NamespaceList{}
			if err := s.client.List(ctx, list, &client.ListOptions{}); err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			var names []string
			for _, ns := range list.Items {
				if strings.HasPrefix(ns.Name, toComplete) {
					names = append(names, ns.Name)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		})
}
