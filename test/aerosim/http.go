package aerosim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// NewHandler serves the control API, a thin JSON adapter over s:
//
//	GET    /nodes                     → [NodeState]
//	POST   /nodes                     NodeSpec → 201 NodeState
//	GET    /nodes/{name}              → NodeState
//	DELETE /nodes/{name}              → 204
//	POST   /nodes/{name}/warm-restart → NodeState
//	POST   /nodes/warm-restart        {"nodes":["<name>", ...]} → [NodeState] (all at the same instant)
//	PUT    /nodes/{name}/latency      {"latency":"250ms"} → NodeState
//	PUT    /nodes/{name}/fault        {"fault":"hang"} → NodeState ("" clears it)
//	PUT    /nodes/{name}/pin          Pin → NodeState
//	GET    /nodes/{name}/log          → {"lines":["<time> GMT: INFO (hb): ...", ...]}
//	GET    /nodes/{name}/files?path=P → the file's content (text/plain); 404 if there is none
//	PUT    /nodes/{name}/files?path=P the content → 204
//	PUT    /nodes/{name}/dirs?path=D  {"<file name>":"<content>", ...} → 204 (replaces the files in D)
//	GET    /dns                       → {"<name>":["<ip>", ...], ...}
//	PUT    /dns                       {"<name>":["<ip>", ...], ...} → 204 (replaces the table)
//	GET    /partitions                → {"groups":[["<node>", ...], ...]}
//	PUT    /partitions                {"groups":[["<node>", ...], ...]} → 204 (cuts the mesh between groups)
//	DELETE /partitions                → 204 (heals the mesh)
//	GET    /history[?since=<RFC 3339>] → History
//
// Errors are {"error":"..."} with 400 (bad input), 404 (unknown node) or 409 (conflict).
func NewHandler(s *Sim) http.Handler {
	mux := http.NewServeMux()
	nodeRoutes(mux, s)
	meshRoutes(mux, s)
	return mux
}

func nodeRoutes(mux *http.ServeMux, s *Sim) {
	mux.HandleFunc("GET /nodes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Nodes())
	})
	mux.HandleFunc("POST /nodes", func(w http.ResponseWriter, r *http.Request) {
		var spec NodeSpec
		if decode(w, r, &spec) {
			respond(w, http.StatusCreated)(s.AddNode(spec))
		}
	})
	mux.HandleFunc("GET /nodes/{name}", func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusOK)(s.Node(r.PathValue("name")))
	})
	mux.HandleFunc("DELETE /nodes/{name}", func(w http.ResponseWriter, r *http.Request) {
		noContent(w, s.RemoveNode(r.PathValue("name")))
	})
	mux.HandleFunc("POST /nodes/{name}/warm-restart", func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusOK)(s.WarmRestart(r.PathValue("name")))
	})
	mux.HandleFunc("POST /nodes/warm-restart", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Nodes []string `json:"nodes"`
		}
		if !decode(w, r, &body) {
			return
		}
		states, err := s.WarmRestartNodes(body.Nodes)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, states)
	})
	mux.HandleFunc("PUT /nodes/{name}/latency", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Latency Duration `json:"latency"`
		}
		if decode(w, r, &body) {
			respond(w, http.StatusOK)(s.SetLatency(r.PathValue("name"), body.Latency.Duration))
		}
	})
	mux.HandleFunc("PUT /nodes/{name}/fault", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Fault Fault `json:"fault"`
		}
		if decode(w, r, &body) {
			respond(w, http.StatusOK)(s.SetFault(r.PathValue("name"), body.Fault))
		}
	})
	mux.HandleFunc("PUT /nodes/{name}/pin", func(w http.ResponseWriter, r *http.Request) {
		var pin Pin
		if decode(w, r, &pin) {
			respond(w, http.StatusOK)(s.SetPin(r.PathValue("name"), pin))
		}
	})
	mux.HandleFunc("GET /nodes/{name}/log", func(w http.ResponseWriter, r *http.Request) {
		lines, err := s.Log(r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string][]string{"lines": lines})
	})
	fileRoutes(mux, s)
}

func fileRoutes(mux *http.ServeMux, s *Sim) {
	mux.HandleFunc("GET /nodes/{name}/files", func(w http.ResponseWriter, r *http.Request) {
		content, err := s.ReadFile(r.PathValue("name"), r.URL.Query().Get("path"))
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, content)
	})
	mux.HandleFunc("PUT /nodes/{name}/files", func(w http.ResponseWriter, r *http.Request) {
		content, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, fmt.Errorf("%w: %w", ErrInvalid, err))
			return
		}
		noContent(w, s.WriteFile(r.PathValue("name"), r.URL.Query().Get("path"), string(content)))
	})
	mux.HandleFunc("PUT /nodes/{name}/dirs", func(w http.ResponseWriter, r *http.Request) {
		var files map[string]string
		if decode(w, r, &files) {
			noContent(w, s.SetDir(r.PathValue("name"), r.URL.Query().Get("path"), files))
		}
	})
}

func meshRoutes(mux *http.ServeMux, s *Sim) {
	mux.HandleFunc("GET /dns", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.DNS())
	})
	mux.HandleFunc("PUT /dns", func(w http.ResponseWriter, r *http.Request) {
		var records map[string][]string
		if decode(w, r, &records) {
			noContent(w, s.SetDNS(records))
		}
	})
	mux.HandleFunc("GET /partitions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, partitions{Groups: s.Partitions()})
	})
	mux.HandleFunc("PUT /partitions", func(w http.ResponseWriter, r *http.Request) {
		var p partitions
		if decode(w, r, &p) {
			noContent(w, s.SetPartitions(p.Groups))
		}
	})
	mux.HandleFunc("DELETE /partitions", func(w http.ResponseWriter, _ *http.Request) {
		noContent(w, s.SetPartitions(nil))
	})
	mux.HandleFunc("GET /history", func(w http.ResponseWriter, r *http.Request) {
		var since time.Time
		if v := r.URL.Query().Get("since"); v != "" {
			var err error
			if since, err = time.Parse(time.RFC3339Nano, v); err != nil {
				writeError(w, fmt.Errorf("%w: since: %w", ErrInvalid, err))
				return
			}
		}
		writeJSON(w, http.StatusOK, s.History(since))
	})
}

// partitions is the body of /partitions.
type partitions struct {
	Groups [][]string `json:"groups"`
}

// noContent answers 204, or the error.
func noContent(w http.ResponseWriter, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxBody bounds a request body: a node's config and files, or the DNS table of a few hundred pods.
const maxBody = 4 << 20

// decode reads a JSON body into v; on failure it answers 400 and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, fmt.Errorf("%w: %w", ErrInvalid, err))
		return false
	}
	return true
}

// respond returns a sink for a Sim method's (NodeState, error) result.
func respond(w http.ResponseWriter, status int) func(NodeState, error) {
	return func(st NodeState, err error) {
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, status, st)
	}
}

func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoFile):
		status = http.StatusNotFound
	case errors.Is(err, ErrConflict):
		status = http.StatusConflict
	case errors.Is(err, ErrClosed):
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
