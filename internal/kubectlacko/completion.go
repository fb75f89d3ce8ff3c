package kubectlacko

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// completionTimeout bounds the API calls of one completion: a shell waits for them.
const completionTimeout = 5 * time.Second

// completeClusterNames completes the NAME argument with the clusters of the namespace.
func (o *options) completeClusterNames(cmd *cobra.Command, args []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return o.completeClusterFlag(cmd, args, toComplete)
}

// completeClusterFlag completes a flag that names a cluster (restore --cluster) with the clusters of
// the namespace.
func (o *options) completeClusterFlag(cmd *cobra.Command, _ []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
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

// completeBackupNames completes the NAME argument of backup with the AerospikeBackups of the namespace.
func (o *options) completeBackupNames(cmd *cobra.Command, args []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	backups, ok := o.listBackups(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveError
	}
	var names []string
	for _, bk := range backups {
		if strings.HasPrefix(bk.Name, toComplete) {
			names = append(names, bk.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeBackupRuns completes restore --from: the AerospikeBackups of the namespace, then, after
// BACKUP/, the ids of its successful runs.
func (o *options) completeBackupRuns(cmd *cobra.Command, _ []string,
	toComplete string) ([]string, cobra.ShellCompDirective) {
	backups, ok := o.listBackups(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveError
	}
	name, partial, withID := strings.Cut(toComplete, "/")
	var out []string
	for _, bk := range backups {
		switch {
		case !withID && strings.HasPrefix(bk.Name, name):
			out = append(out, bk.Name)
		case withID && bk.Name == name:
			for _, run := range bk.Status.Backups {
				if run.Phase == ackov1alpha1.BackupSucceeded && strings.HasPrefix(run.ID, partial) {
					out = append(out, name+"/"+run.ID)
				}
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// listBackups lists the AerospikeBackups of the namespace for a completion.
func (o *options) listBackups(cmd *cobra.Command) ([]ackov1alpha1.AerospikeBackup, bool) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	s, err := o.connect()
	if err != nil {
		return nil, false
	}
	list := &ackov1alpha1.AerospikeBackupList{}
	if err := s.client.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return nil, false
	}
	return list.Items, true
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
