package realnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acko-io/acko/test/crilog"
	"github.com/acko-io/acko/test/proc"
)

// Records: what a launcher created, written before (or as) it is created, so that a later run can
// remove it after a crash. A link is recorded with its name and index: a link of the same name made
// by someone else since has another index and is left alone.

// bridgeRecord is the launcher's bridge.
type bridgeRecord struct {
	Name  string `json:"name"`
	Index int    `json:"index"` // 0 until made
}

// nodeRecord is a node's processes and link.
type nodeRecord struct {
	Name    string        `json:"name"`
	Veth    string        `json:"veth"`
	Sandbox proc.Record   `json:"sandbox"`
	Procs   []proc.Record `json:"procs"` // unshare and tini of the current container
}

func (l *Launcher) recordPath(node string) string { return recordPath(l.opts.Dir, node) }

func recordPath(dir, node string) string {
	return filepath.Join(dir, "records", "node-"+safeName(node)+".json")
}

func bridgeRecordPath(dir string) string { return filepath.Join(dir, "records", "bridge.json") }

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (l *Launcher) record(n *Node) error {
	n.mu.Lock()
	rec := nodeRecord{Name: n.spec.Name, Veth: n.veth, Sandbox: n.sandbox}
	if c := n.container; c != nil {
		rec.Procs = []proc.Record{c.unshare, c.tini}
	}
	n.mu.Unlock()
	return writeJSON(l.recordPath(n.spec.Name), rec)
}

// createBridge makes the bridge with the gateway address, recorded first. A bridge of that name
// that this launcher did not record is someone else's: an error, never touched; unless it is an
// earlier launcher's whose records were lost (its state directory deleted while it ran), which
// nothing uses any more: the MAC only a launcher gives its bridge, and no ports.
func (l *Launcher) createBridge(ctx context.Context) error {
	// A fixed MAC: a bridge takes its ports' lowest otherwise, and changes it as nodes come and go.
	mac := macOf(l.gateway)
	if iface, err := net.InterfaceByName(l.opts.Bridge); err == nil {
		if iface.HardwareAddr.String() != mac || bridgeHasPorts(l.opts.Bridge) {
			return fmt.Errorf("realnode: a link named %s exists and is not one this launcher recorded in %s",
				l.opts.Bridge, l.opts.Dir)
		}
		if err := run(ctx, "", "ip", "link", "del", l.opts.Bridge); err != nil {
			return err
		}
	}
	path := bridgeRecordPath(l.opts.Dir)
	if err := writeJSON(path, bridgeRecord{Name: l.opts.Bridge}); err != nil {
		return err
	}
	if err := run(ctx, "", "ip", "link", "add", l.opts.Bridge, "address", mac, "type", "bridge"); err != nil {
		_ = os.Remove(path)
		return err
	}
	iface, err := net.InterfaceByName(l.opts.Bridge)
	if err != nil {
		return err
	}
	if err := writeJSON(path, bridgeRecord{Name: l.opts.Bridge, Index: iface.Index}); err != nil {
		return err
	}
	if err := run(ctx, "", "ip", "addr", "add", fmt.Sprintf("%s/%d", l.gateway, l.opts.Subnet.Bits()),
		"dev", l.opts.Bridge); err != nil {
		return err
	}
	return run(ctx, "", "ip", "link", "set", l.opts.Bridge, "up")
}

// Cleanup stops every node and removes the bridge: no process, namespace, link or mount of this
// launcher is left. The nodes' files stay in Dir.
func (l *Launcher) Cleanup() error {
	l.mu.Lock()
	names := make([]string, 0, len(l.nodes))
	for name := range l.nodes {
		names = append(names, name)
	}
	l.mu.Unlock()
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() { errs <- l.Stop(name) }()
	}
	all := make([]error, 0, len(names)+1)
	for range names {
		all = append(all, <-errs)
	}
	all = append(all, CleanupLeftovers(l.opts.Dir))
	return errors.Join(all...)
}

// CleanupLeftovers removes what a launcher with state in dir recorded and left (a crashed run): its
// nodes' processes (each only if it is still the one recorded), their links, and its bridge (only if
// it is still the one recorded). Nothing else.
func CleanupLeftovers(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "records", "node-*.json"))
	var errs []error
	for _, f := range files {
		var rec nodeRecord
		if b, err := os.ReadFile(f); err != nil || json.Unmarshal(b, &rec) != nil {
			errs = append(errs, fmt.Errorf("realnode: unreadable record %s: remove it by hand once its node is gone", f))
			continue
		}
		nodeErrs := make([]error, 0, len(rec.Procs)+2)
		// Tini first: PID 1 gone, the kernel kills the rest of its PID namespace.
		for _, p := range append(rec.Procs, rec.Sandbox) {
			nodeErrs = append(nodeErrs, killAndWait(p))
		}
		nodeErrs = append(nodeErrs, deleteLink(rec.Veth))
		if err := errors.Join(nodeErrs...); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.Remove(f))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return deleteBridge(dir)
}

func deleteBridge(dir string) error {
	path := bridgeRecordPath(dir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var rec bridgeRecord
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return fmt.Errorf("realnode: unreadable record %s: remove it by hand once its bridge is gone", path)
	}
	if iface, err := net.InterfaceByName(rec.Name); err == nil && (rec.Index == 0 || iface.Index == rec.Index) {
		// Index 0: the launcher died between recording the bridge and reading its index back, so
		// the bridge of that name is the one it was making (New refuses to start on a bridge of
		// that name it did not record).
		if err := run(context.Background(), "", "ip", "link", "del", rec.Name); err != nil {
			return err
		}
	}
	return os.Remove(path)
}

// bridgeHasPorts says whether any link is attached to the bridge (or whether that cannot be read).
func bridgeHasPorts(name string) bool {
	ports, err := os.ReadDir(filepath.Join("/sys/class/net", name, "brif"))
	return err != nil || len(ports) > 0
}

// deleteLink removes a node's host-side link once its network namespace is gone (the kernel removes
// the pair with the namespace, a moment after its last process ended).
func deleteLink(name string) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := net.InterfaceByName(name); err != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	err := run(context.Background(), "", "ip", "link", "del", name)
	if err != nil && strings.Contains(err.Error(), "Cannot find device") {
		return nil
	}
	return err
}

// criLog is a container's log file, written by its two streams.
type criLog struct {
	f        *os.File
	out, err *crilog.Writer
}

func openCRILog(path string) (*criLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &criLog{f: f, out: &crilog.Writer{W: f, Stream: "stdout"}, err: &crilog.Writer{W: f, Stream: "stderr"}}, nil
}

func (c *criLog) stream(name string) io.Writer {
	if name == "stderr" {
		return c.err
	}
	return c.out
}

// Close writes the streams' last lines and closes the file (once the process's output is read).
func (c *criLog) Close() error {
	c.out.Flush()
	c.err.Flush()
	return c.f.Close()
}
