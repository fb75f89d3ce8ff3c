package aerosim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
)

func call(t *testing.T, method, url, body string, wantStatus int, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, data, wantStatus)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, data)
		}
	}
}

func TestHTTPAPI(t *testing.T) {
	s := newSim(t, Options{})
	srv := httptest.NewServer(NewHandler(s))
	defer srv.Close()
	u := srv.URL

	var st NodeState
	call(t, "POST", u+"/nodes", `{"cluster":"c1","name":"a"}`, http.StatusCreated, &st)
	if st.Name != "a" || !st.Member || !strings.HasPrefix(st.IP, "127.") {
		t.Fatalf("added: %+v", st)
	}
	call(t, "POST", u+"/nodes", `{"cluster":"c1","name":"a"}`, http.StatusConflict, nil)
	call(t, "POST", u+"/nodes", `{"cluster":"c1","name":"b","ip":"10.1.2.3"}`, http.StatusBadRequest, nil)
	call(t, "POST", u+"/nodes", `{"cluster":"c1","name":"b","bogus":1}`, http.StatusBadRequest, nil)
	call(t, "PUT", u+"/nodes/a/latency", `{"latency":"5ms"}`, http.StatusOK, &st)
	if st.Latency.Milliseconds() != 5 {
		t.Errorf("latency: %+v", st.Latency)
	}
	call(t, "PUT", u+"/nodes/a/fault", `{"fault":"hang"}`, http.StatusOK, &st)
	if st.Fault != FaultHang {
		t.Errorf("fault: %q", st.Fault)
	}
	call(t, "PUT", u+"/nodes/a/pin", `{"clusterIntegrity":false}`, http.StatusOK, &st)
	if st.ClusterIntegrity {
		t.Error("pinned cluster_integrity=false not applied")
	}
	call(t, "POST", u+"/nodes/a/warm-restart", "", http.StatusOK, &st)
	if st.Restarts != 1 {
		t.Errorf("restart: %+v", st)
	}
	var all []NodeState
	call(t, "GET", u+"/nodes", "", http.StatusOK, &all)
	if len(all) != 1 {
		t.Errorf("nodes: %+v", all)
	}
	call(t, "GET", u+"/nodes/a", "", http.StatusOK, &st)
	call(t, "DELETE", u+"/nodes/a", "", http.StatusNoContent, nil)
	call(t, "GET", u+"/nodes/a", "", http.StatusNotFound, nil)
}

func TestHTTPMeshAPI(t *testing.T) {
	s := newSim(t, Options{})
	srv := httptest.NewServer(NewHandler(s))
	defer srv.Close()
	u := srv.URL

	call(t, "PUT", u+"/dns", `{"db-headless.ns.svc.cluster.local":["127.77.0.10"]}`, http.StatusNoContent, nil)
	call(t, "PUT", u+"/dns", `{"x":["::1"]}`, http.StatusBadRequest, nil)
	var dns map[string][]string
	call(t, "GET", u+"/dns", "", http.StatusOK, &dns)
	if len(dns) != 1 || dns["db-headless.ns.svc.cluster.local"][0] != "127.77.0.10" {
		t.Errorf("dns: %v", dns)
	}
	body, _ := json.Marshal(NodeSpec{Name: "a", IP: "127.77.0.10", Config: conf("db", "db-headless.ns.svc.cluster.local")})
	call(t, "POST", u+"/nodes", string(body), http.StatusCreated, nil)
	body, _ = json.Marshal(NodeSpec{Name: "b", IP: "127.77.0.11", Config: conf("db", "127.77.0.10")})
	call(t, "POST", u+"/nodes", string(body), http.StatusCreated, nil)
	var log struct{ Lines []string }
	call(t, "GET", u+"/nodes/a/log", "", http.StatusOK, &log)
	if len(log.Lines) == 0 || !strings.Contains(strings.Join(log.Lines, "\n"), "removing self seed entry") {
		t.Errorf("log: %v", log.Lines)
	}
	call(t, "GET", u+"/nodes/nope/log", "", http.StatusNotFound, nil)

	call(t, "PUT", u+"/partitions", `{"groups":[["a"],["b"]]}`, http.StatusNoContent, nil)
	call(t, "PUT", u+"/partitions", `{"groups":[["a"],["nope"]]}`, http.StatusNotFound, nil)
	var p partitions
	call(t, "GET", u+"/partitions", "", http.StatusOK, &p)
	if len(p.Groups) != 2 {
		t.Errorf("partitions: %+v", p)
	}
	var st NodeState
	call(t, "GET", u+"/nodes/a", "", http.StatusOK, &st)
	if st.ClusterSize != 1 {
		t.Errorf("cut: %+v", st)
	}
	call(t, "DELETE", u+"/partitions", "", http.StatusNoContent, nil)
	call(t, "GET", u+"/nodes/a", "", http.StatusOK, &st)
	if st.ClusterSize != 2 {
		t.Errorf("healed: %+v", st)
	}
	var h History
	call(t, "GET", u+"/history", "", http.StatusOK, &h)
	if len(h.Transitions) == 0 || len(h.Clusters) == 0 {
		t.Errorf("history: %+v", h)
	}
	call(t, "GET", u+"/history?since=2999-01-01T00:00:00Z", "", http.StatusOK, &h)
	if len(h.Transitions) != 0 {
		t.Errorf("history since 2999: %+v", h)
	}
	call(t, "GET", u+"/history?since=yesterday", "", http.StatusBadRequest, nil)
}

// The real client's own parser must read the simulator like a server.
func TestV7ClientReadsSimulator(t *testing.T) {
	s := newSim(t, Options{})
	a := addNode(t, s, NodeSpec{Cluster: "c1", Name: "a"})
	conn, err := as.NewConnection(as.NewClientPolicy(), as.NewHost(a.IP, 3000))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, err := conn.RequestInfo("node", "statistics", "quiesce:")
	if err != nil {
		t.Fatal(err)
	}
	if got["node"] != a.NodeID || !strings.Contains(got["statistics"], "cluster_size=1;") ||
		got["quiesce:"] != errEnterpriseOnly {
		t.Errorf("RequestInfo: %v", got)
	}
}
