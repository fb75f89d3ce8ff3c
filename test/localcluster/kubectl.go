package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Kubectl runs the real kubectl (bin/assets) as the cluster admin and returns its stdout; the
// error carries stderr.
func (o Options) Kubectl(ctx context.Context, args ...string) (string, error) {
	return o.KubectlAs(ctx, o.KubeconfigPath(), args...)
}

// KubectlAs runs kubectl with another kubeconfig (e.g. the manager's, to act as its
// ServiceAccount).
func (o Options) KubectlAs(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, o.KubectlPath(), append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// createToken issues a token for a ServiceAccount of acko-system.
func (o Options) createToken(ctx context.Context, serviceAccount string) (string, error) {
	out, err := o.Kubectl(ctx, "create", "token", serviceAccount, "-n", ManagerNamespace, "--duration=24h")
	return strings.TrimSpace(out), err
}
