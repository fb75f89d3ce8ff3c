// Command kubectl_complete-acko gives `kubectl acko` shell completion: kubectl (1.26 and later)
// runs kubectl_complete-<plugin> with the words typed after the plugin's name and reads cobra's
// completion answer. It asks kubectl-acko's own completion: the kubectl-acko beside this program,
// else the one on the PATH.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

const plugin = "kubectl-acko"

func main() {
	path, err := findPlugin()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl_complete-acko:", err)
		os.Exit(1)
	}
	cmd := exec.Command(path, append([]string{"__complete"}, os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "kubectl_complete-acko:", err)
		os.Exit(1)
	}
}

// findPlugin prefers the kubectl-acko installed with this program (same folder), so that the two
// always match.
func findPlugin() (string, error) {
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), plugin)
		if info, err := os.Stat(beside); err == nil && !info.IsDir() {
			return beside, nil
		}
	}
	return exec.LookPath(plugin)
}
