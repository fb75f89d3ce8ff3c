package podexec

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OpenFileLimit is the open-file limit (RLIMIT_NOFILE, the soft one: what getrlimit's rlim_cur gives
// asd) the pod's Aerospike container runs under. asd refuses a proto-fd-max above it, live ("can't set
// proto-fd-max 30000 > system limit 20000") and at start (it does not start).
func (cl *Client) OpenFileLimit(ctx context.Context, pod *corev1.Pod) (int64, error) {
	limits, err := judgeRead(pod.Namespace+"/"+pod.Name, cl.exec(ctx, pod, readInitLimits))
	if err != nil {
		return 0, err
	}
	return ParseOpenFileLimit(limits)
}

// ParseOpenFileLimit reads the soft "Max open files" of a /proc/<pid>/limits text ("unlimited" is
// math.MaxInt64).
func ParseOpenFileLimit(limits string) (int64, error) {
	for line := range strings.Lines(limits) {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		if fields[0] == "unlimited" {
			return math.MaxInt64, nil
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("the open-file limit %q is not a number", fields[0])
		}
		return n, nil
	}
	return 0, fmt.Errorf("no \"Max open files\" line in /proc/1/limits: %q", clip([]byte(limits)))
}
