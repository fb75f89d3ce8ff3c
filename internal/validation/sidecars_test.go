package validation

import "testing"

func TestSidecarUnknownFields(t *testing.T) {
	const unknown = ": unknown field: a sidecar is a Kubernetes container (see kubectl explain pod.spec.containers)"
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"a typo", `{"spec":{"podSpec":{"sidecars":[{"name":"a","image":"b"},{"name":"c","image":"d","imagee":"e"}]}}}`,
			[]string{`spec.podSpec.sidecars[1]: Invalid value: "imagee"` + unknown}},
		{"case matters, as for pods", `{"spec":{"podSpec":{"sidecars":[{"name":"a","Image":"b"}]}}}`,
			[]string{`spec.podSpec.sidecars[0]: Invalid value: "Image"` + unknown}},
		{"nested", `{"spec":{"podSpec":{"sidecars":[{"name":"a","image":"b","ports":[{"containerPort":80,"hostPortt":1}]}]}}}`,
			[]string{`spec.podSpec.sidecars[0]: Invalid value: "ports[0].hostPortt"` + unknown}},
		{"a valid container", `{"spec":{"podSpec":{"sidecars":[{"name":"a","image":"b","ports":[{"containerPort":80}],` +
			`"resources":{"limits":{"cpu":"1"}}}]}}}`, nil},
		{"no podSpec", `{"spec":{"size":3}}`, nil},
		{"null sidecars", `{"spec":{"podSpec":{"sidecars":null}}}`, nil},
		{"a type error (the typed decoder refuses it)", `{"spec":{"podSpec":{"sidecars":[{"name":1}]}}}`, nil},
		{"not JSON (the typed decoder refuses it)", `{"spec":`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectMessages(t, SidecarUnknownFields([]byte(tt.raw)), tt.want...)
		})
	}
}
