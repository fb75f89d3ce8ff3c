// Package kubectlacko is the kubectl plugin `kubectl acko`: status, list, pause, resume and restart
// of AerospikeClusters, on-demand backups and restores (AerospikeBackup, AerospikeRestore), with
// kubectl's standard flags (k8s.io/cli-runtime) and shell completion.
// cmd/kubectl-acko and cmd/kubectl_complete-acko are its thin mains.
package kubectlacko

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Version is set at build time (-ldflags -X); `go install ...@vX` builds report the module version.
var Version = ""

// version is the plugin's version as `kubectl acko --version` prints it.
func version() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// options are what every subcommand shares: kubectl's connection flags and the output streams.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// now is the clock; tests fix it.
	now func() time.Time
}

// NewCommand returns `kubectl acko` with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), streams: streams, now: time.Now}
	root := &cobra.Command{
		Use:   "kubectl-acko",
		Short: "See, pause, resume, restart, back up and restore ACKO's Aerospike clusters",
		Long: "kubectl acko shows and drives AerospikeClusters managed by ACKO: status, list, pause, resume " +
			"and restart (WarmRestart and PodRestart operations), and runs backups (AerospikeBackup) and " +
			"restores (AerospikeRestore). It uses kubectl's flags and kubeconfig.",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl acko"},
		// kubectl completes plugins through kubectl_complete-acko, not through a script of ours.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	// Without a shorthand: kubectl users read -v as log verbosity.
	root.Flags().Bool("version", false, "print the version of kubectl acko")
	o.flags.AddFlags(root.PersistentFlags())
	o.registerNamespaceCompletion(root)
	root.AddCommand(o.newStatusCommand(), o.newListCommand(), o.newPauseCommand(true), o.newPauseCommand(false),
		o.newRestartCommand(), o.newBackupCommand(), o.newRestoreCommand())
	return root
}

// Run executes the plugin with args (without the program name) and returns its exit code: 0, or 1
// after printing the error.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		printError(streams.ErrOut, err)
		return 1
	}
	return 0
}

func printError(w io.Writer, err error) {
	_, _ = fmt.Fprintf(w, "Error: %v\n", err)
}
