package pods

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// LogReader reads the last lines of a pod's container log (LogTail; the tests' stand-ins): the cluster
// reconciler reads asd's cold start from it, the backup and restore reconcilers their tools' summaries.
type LogReader interface {
	Tail(ctx context.Context, pod *corev1.Pod, container string, lines int64) ([]string, error)
}

// LogTail reads the last lines of a pod's container log through the API server (pods/log), as
// `kubectl logs --tail` does.
type LogTail struct {
	Client kubernetes.Interface
}

// maxLogBytes bounds what one read returns, whatever the lines' length.
const maxLogBytes = 64 << 10

// Tail returns the container's last lines, oldest first.
func (l LogTail) Tail(ctx context.Context, pod *corev1.Pod, container string, lines int64) ([]string, error) {
	limit := int64(maxLogBytes)
	raw, err := l.Client.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
		Container: container, TailLines: &lines, LimitBytes: &limit}).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(raw), "\n"), "\n"), nil
}
