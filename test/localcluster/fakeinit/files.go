package fakeinit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// Environment of a pod's exec'd commands, set by the sync loop on the pod's kwok Exec.
const (
	// EnvMounts is the JSON array of the container's volume mount paths: the simulator holds the
	// files under them, and the cat and cp shims never touch this machine's files there.
	EnvMounts = "POD_MOUNTS"
	// EnvSimFiles is "true" in the container whose files the simulator holds (the Aerospike one);
	// in another container the shims refuse its mount paths.
	EnvSimFiles = "POD_SIM_FILES"
)

// podFiles are the files of the pod an exec'd command runs for.
type podFiles struct {
	node   string // simulator node of the pod
	mounts []string
	sim    bool
	client *simclient.Client
}

// podFilesFromEnv reads the exec's environment.
func podFilesFromEnv() (podFiles, error) {
	p := podFiles{sim: os.Getenv(EnvSimFiles) == "true"}
	if v := os.Getenv(EnvMounts); v != "" {
		if err := json.Unmarshal([]byte(v), &p.mounts); err != nil {
			return p, fmt.Errorf("%s must be a JSON array of paths: %w", EnvMounts, err)
		}
	}
	ns, pod, url := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"), os.Getenv(EnvSimURL)
	if len(p.mounts) > 0 && (ns == "" || pod == "" || url == "") {
		return p, errors.New("POD_NAMESPACE, POD_NAME or " + EnvSimURL + " unset: no pod whose files to use")
	}
	p.node, p.client = simclient.NodeName(ns, pod), simclient.New(url)
	return p, nil
}

// simulated reports whether p is under one of the pod's mounts, or is the Aerospike container's
// /proc/1/limits: asd's limits are the simulated node's (its open-file limit), not this machine's.
func (p podFiles) simulated(file string) bool {
	if !path.IsAbs(file) {
		return false
	}
	file = path.Clean(file)
	if p.sim && file == aerosim.ProcLimits {
		return true
	}
	for _, m := range p.mounts {
		if m = path.Clean(m); file == m || strings.HasPrefix(file, m+"/") {
			return true
		}
	}
	return false
}

// mountPoint reports whether file is one of the mounts (a directory).
func (p podFiles) mountPoint(file string) bool {
	for _, m := range p.mounts {
		if path.Clean(m) == path.Clean(file) {
			return true
		}
	}
	return false
}

// anySimulated reports whether any argument is a simulated path.
func (p podFiles) anySimulated(args []string) bool {
	for _, a := range args {
		if p.simulated(a) {
			return true
		}
	}
	return false
}

// shimError is an error the shims print as the real command would.
type shimError string

func (e shimError) Error() string { return string(e) }

// errNoSuchFile is strerror(ENOENT), as cat and cp print it.
const errNoSuchFile shimError = "No such file or directory"

func (p podFiles) read(file string) (string, error) {
	if !p.simulated(file) {
		b, err := os.ReadFile(file)
		return string(b), err
	}
	if !p.sim {
		return "", errors.New("the files of this container are not simulated")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	content, err := p.client.ReadFile(ctx, p.node, file)
	if errors.Is(err, aerosim.ErrNoFile) {
		return "", errNoSuchFile
	}
	return content, err
}

func (p podFiles) write(file, content string) error {
	if !p.simulated(file) {
		return os.WriteFile(file, []byte(content), 0o644)
	}
	if !p.sim {
		return errors.New("the files of this container are not simulated")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.client.WriteFile(ctx, p.node, path.Clean(file), content)
}

// Cat is the cat shim: the pod's simulated files are read from the simulator, anything else by
// the real cat.
func Cat(args []string) int {
	return fileCommand("cat", args, cat)
}

// Cp is the cp shim: `cp SOURCE DEST` with a simulated path on either side copies through the
// simulator; anything else is the real cp.
func Cp(args []string) int {
	return fileCommand("cp", args, cp)
}

// fileCommand runs fn when args name a simulated file, else execs the real command.
func fileCommand(name string, args []string, fn func(podFiles, []string, io.Writer, io.Writer) int) int {
	p, err := podFilesFromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s (local cluster shim): %v\n", name, err)
		return 1
	}
	if !p.anySimulated(args) {
		return execReal(name, args)
	}
	code := fn(p, args, os.Stdout, os.Stderr)
	logf("%s shim: %s %s (pod node %s): exit %d", name, name, strings.Join(args, " "), p.node, code)
	return code
}

// operands are the arguments, or false when there is an option (not simulated).
func operands(args []string) ([]string, bool) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, false
		}
	}
	return args, true
}

func cat(p podFiles, args []string, stdout, stderr io.Writer) int {
	files, ok := operands(args)
	if !ok || len(files) == 0 {
		fmt.Fprintln(stderr, "cat (local cluster shim): only `cat FILE...` is simulated for the pod's files")
		return 1
	}
	code := 0
	for _, f := range files {
		content, err := p.read(f)
		if err != nil {
			fmt.Fprintf(stderr, "cat: %s: %v\n", f, err)
			code = 1
			continue
		}
		_, _ = io.WriteString(stdout, content)
	}
	return code
}

func cp(p podFiles, args []string, _, stderr io.Writer) int {
	files, ok := operands(args)
	if !ok || len(files) != 2 {
		fmt.Fprintln(stderr, "cp (local cluster shim): only `cp SOURCE DEST` is simulated for the pod's files")
		return 1
	}
	src, dst := files[0], files[1]
	content, err := p.read(src)
	if err != nil {
		fmt.Fprintf(stderr, "cp: cannot stat '%s': %v\n", src, err)
		return 1
	}
	if strings.HasSuffix(dst, "/") || p.mountPoint(dst) {
		dst = path.Join(dst, path.Base(src))
	}
	if err := p.write(dst, content); err != nil {
		fmt.Fprintf(stderr, "cp: cannot create regular file '%s': %v\n", dst, err)
		return 1
	}
	return 0
}
