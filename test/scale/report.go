package scale

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Result is one run of the bench: the setting and the figures.
type Result struct {
	N       int    `json:"n"`
	Machine string `json:"machine"`
	Command string `json:"command"`
	Date    string `json:"date"`
	// Manager and Harness say the client limits and flags each side ran with.
	Manager string `json:"manager"`
	Harness string `json:"harness"`
	// Figures, in the order of the table.
	Figures []Figure `json:"figures"`
	// Notes say what a reader of the figures must know (e.g. a phase that did not finish).
	Notes []string `json:"notes,omitempty"`
}

// Figure is one measured value. Every figure is better lower: a later run is compared to the
// baseline's figure of the same name and N.
type Figure struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// slack is the absolute noise each unit tolerates besides the relative tolerance: a few hundred
// milliseconds or requests are noise on a shared 2-core machine.
var slack = map[string]float64{unitSeconds: 0.5, unitMiB: 20, unitPercent: 5, unitRequests: 3, unitPerMinute: 1,
	unitCPUSeconds: 2, unitCount: 20}

// Units of the figures.
const (
	unitSeconds    = "s"
	unitMiB        = "MiB"
	unitPercent    = "%"
	unitRequests   = "req"
	unitPerMinute  = "/min"
	unitCPUSeconds = "CPU s"
	unitCount      = "" // open files, sockets, goroutines
)

// Baseline is the file of kept results, one per N.
type Baseline struct {
	Runs []Result `json:"runs"`
}

// ReadBaseline reads a baseline file; a missing file is an empty baseline.
func ReadBaseline(path string) (Baseline, error) {
	var b Baseline
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return b, nil
	}
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// With returns the baseline with r in place of the run of the same N.
func (b Baseline) With(r Result) Baseline {
	runs := slices.DeleteFunc(slices.Clone(b.Runs), func(old Result) bool { return old.N == r.N })
	runs = append(runs, r)
	slices.SortFunc(runs, func(x, y Result) int { return x.N - y.N })
	return Baseline{Runs: runs}
}

// Write writes the baseline as indented JSON.
func (b Baseline) Write(path string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Regressions lists the figures of r worse than the baseline's run of the same N by more than
// tolerance (0.5: 50 %) plus the unit's slack. No run of that N: an error.
func (b Baseline) Regressions(r Result, tolerance float64) ([]string, error) {
	i := slices.IndexFunc(b.Runs, func(old Result) bool { return old.N == r.N })
	if i < 0 {
		return nil, fmt.Errorf("the baseline has no run with N=%d", r.N)
	}
	base := map[string]Figure{}
	for _, f := range b.Runs[i].Figures {
		base[f.Name] = f
	}
	var out []string
	for _, f := range r.Figures {
		old, ok := base[f.Name]
		if !ok || math.IsNaN(f.Value) {
			continue
		}
		if limit := old.Value*(1+tolerance) + slack[f.Unit]; f.Value > limit {
			out = append(out, fmt.Sprintf("%s: %s, baseline %s (limit %s)", f.Name,
				format(f.Value, f.Unit), format(old.Value, f.Unit), format(limit, f.Unit)))
		}
	}
	return out, nil
}

// Table writes the results side by side as a Markdown table: one row per figure, one column per N.
func Table(w io.Writer, runs []Result) {
	header := make([]string, 0, 1+len(runs))
	header = append(header, "Figure")
	for _, r := range runs {
		header = append(header, fmt.Sprintf("N = %d", r.N))
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	// Rows in the order of the latest run (the last), then figures only older runs have.
	var names []string
	values := map[string][]string{}
	for i := len(runs) - 1; i >= 0; i-- {
		for _, f := range runs[i].Figures {
			if _, ok := values[f.Name]; !ok {
				names = append(names, f.Name)
				values[f.Name] = slices.Repeat([]string{"–"}, len(runs)) // a run without the figure

			}
			values[f.Name][i] = format(f.Value, f.Unit)
		}
	}
	for _, name := range names {
		fmt.Fprintf(w, "| %s | %s |\n", name, strings.Join(values[name], " | "))
	}
}

func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case unit == unitSeconds && v < 10:
		return fmt.Sprintf("%.2f s", v)
	case v == math.Trunc(v) || v >= 100:
		return strings.TrimSpace(fmt.Sprintf("%.0f %s", v, unit))
	default:
		return strings.TrimSpace(fmt.Sprintf("%.1f %s", v, unit))
	}
}

// Latencies are the latencies of one step over many clusters.
type Latencies []time.Duration

// Quantile is the q-quantile (nearest rank); NaN when empty.
func (l Latencies) Quantile(q float64) float64 {
	if len(l) == 0 {
		return math.NaN()
	}
	s := slices.Clone(l)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))].Seconds()
}

// figures are the p50, p99 and max of l, named after what.
func (l Latencies) figures(what string) []Figure {
	return []Figure{
		{Name: what + " p50", Unit: unitSeconds, Value: l.Quantile(0.5)},
		{Name: what + " p99", Unit: unitSeconds, Value: l.Quantile(0.99)},
		{Name: what + " max", Unit: unitSeconds, Value: l.Quantile(1)},
	}
}
