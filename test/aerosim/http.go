package aerosim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// NewHandler serves the control API, a thin JSON adapter over s:
//
//	GET    /nodes                     → [NodeState]
//	POST   /nodes                     NodeSpec → 201 NodeState
//	GET    /nodes/{name}              → NodeState
//	DELETE /nodes/{name}              → 204
//	POST   /nodes/{name}/warm-restart → NodeState
//	PUT    /nodes/{name}/latency      {"latency":"250ms"} → NodeState
//	PUT    /nodes/{name}/fault        {"fault":"hang"} → NodeState ("" clears it)
//	PUT    /nodes/{name}/pin          Pin → NodeState
//
// Errors are {"error":"..."} with 400 (bad input), 404 (unknown node) or 409 (conflict).
func NewHandler(s *Sim) http.Handler {
	mux := http.NewServeMux()
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
		if err := s.RemoveNode(r.PathValue("name")); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /nodes/{name}/warm-restart", func(w http.ResponseWriter, r *http.Request) {
		respond(w, http.StatusOK)(s.WarmRestart(r.PathValue("name")))
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
	return mux
}

// decode reads a small JSON body into v; on failure it answers 400 and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
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
	case errors.Is(err, ErrNotFound):
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
